"""An SQLite ledger whose opening is cancelled part-way (the console quit
while its readers opened) closes its connection. aiosqlite's worker thread
is not a daemon: one left waiting for work keeps the interpreter from
exiting after the program has printed its last line."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite import ledger as sqlite_ledger

NOW = 1_800_000_000.0

#: The steps of opening a file once SQLite's connection is made, by the name
#: `core/ledger/sqlite/ledger.py` calls them through.
STEPS = ("register", "refuse_foreign", "_configure", "_migrate", "identify")


def _workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "_connection_worker_thread" in t.name}


def _stall_at(step: str, monkeypatch: pytest.MonkeyPatch, reached: asyncio.Event) -> None:
    async def stalled(*_: Any, **__: Any) -> None:
        reached.set()
        await asyncio.Event().wait()  # until cancelled

    if step == "register":
        monkeypatch.setattr(sqlite_ledger.holders, "register", stalled)
    elif step.startswith("_"):
        monkeypatch.setattr(sqlite_ledger.SqliteLedger, step, stalled)
    else:
        monkeypatch.setattr(sqlite_ledger, step, stalled)


@pytest.mark.parametrize("readonly", [False, True], ids=["writer", "reader"])
@pytest.mark.parametrize("step", STEPS)
async def test_an_open_cancelled_after_connecting_leaves_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, readonly: bool
) -> None:
    db = tmp_path / "l.db"
    made = await open_ledger(db, clock=ManualClock(NOW))
    await made.close()
    before = _workers()
    reached = asyncio.Event()
    _stall_at(step, monkeypatch, reached)
    opening = asyncio.create_task(
        open_ledger(db, clock=ManualClock(NOW), readonly=readonly, create=False)
    )
    await asyncio.wait_for(reached.wait(), 30)
    opening.cancel()
    # Kept, as a worker keeps the error it ended with: its traceback holds
    # the opening's frames, so nothing is left to a collector to stop.
    with pytest.raises(asyncio.CancelledError) as kept:
        await opening
    started = _workers() - before
    for thread in started:
        await asyncio.to_thread(thread.join, 30)
    left = [t.name for t in started if t.is_alive()]
    assert not left, f"cancelled at {step}: {left} still wait for work"
    assert kept.tb is not None


async def test_an_open_cancelled_while_connecting_leaves_no_thread(tmp_path: Path) -> None:
    """Cancelled before SQLite's connect returned: aiosqlite stops its own
    thread; it is waited for here, while the loop can still take its answer."""
    db = tmp_path / "l.db"
    made = await open_ledger(db, clock=ManualClock(NOW))
    await made.close()
    before = _workers()
    opening = asyncio.create_task(open_ledger(db, clock=ManualClock(NOW), readonly=True))
    await asyncio.sleep(0)  # started: the connect is queued to its thread
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    started = _workers() - before
    assert all(not t.is_alive() for t in started), [t.name for t in started]


async def test_a_console_reader_closing_cancelled_still_closes_its_other_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reclaim_tui.core.ledger.console.queries import ConsoleReader

    db = tmp_path / "l.db"
    made = await open_ledger(db, clock=ManualClock(NOW))
    await made.close()
    before = _workers()
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    started = _workers() - before
    assert len(started) == 2
    fast_close = reader._fast.close

    async def cancelled() -> None:
        await fast_close()
        raise asyncio.CancelledError

    monkeypatch.setattr(reader._fast, "close", cancelled)
    with pytest.raises(asyncio.CancelledError) as kept:
        await reader.close()
    for thread in started:
        await asyncio.to_thread(thread.join, 30)
    assert not [t.name for t in started if t.is_alive()]
    assert kept.tb is not None
