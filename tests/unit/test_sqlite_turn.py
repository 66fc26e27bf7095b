"""Processes writing one SQLite ledger take turns through a lock on a file
beside it (core/ledger/sqlite/turn.py): a waiting writer is woken as the
holder lets go, instead of sleeping in SQLite's busy handler. What that must
keep: every write path takes the turn and lets it go; a holder that dies
lets go with its process; a turn held past busy_timeout is a busy ledger,
as a lock held that long is; a waiter that gives up (timed out or
cancelled) leaves no lock behind; where no lock file can be made, writes go
on as before; two processes writing at once lose nothing."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.sqlite.turn import SUFFIX, open_turn
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import LedgerBusyError
from tests.helpers.turn import NOW, Holder, free_here, ledger_at, turn_of, until_waiting

ME = "host-a|100|me"
SPEC = JobSpec(input="a job", model="m").to_json()


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for holder in made:
        holder.kill()


async def _held_insert(
    db: Path, holders: list[Holder], busy_timeout: float = 10.0
) -> tuple[SqliteLedger, asyncio.Task[tuple[list[str], list[str]]]]:
    """A ledger whose insert of k1 waits for the turn another process holds."""
    ledger = await ledger_at(db, busy_timeout)
    holders.append(Holder(db))
    inserting = asyncio.ensure_future(ledger.insert_jobs([("k1", SPEC, "m")], "test"))
    await until_waiting(turn_of(ledger), 1)
    return ledger, inserting


def _keys(db: Path) -> list[str]:
    with sqlite3.connect(db) as check:
        return [r[0] for r in check.execute("SELECT idem FROM jobs ORDER BY idem")]


async def test_every_write_path_waits_for_the_turn_and_then_goes_on(
    tmp_path: Path, holders: list[Holder]
) -> None:
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)
    await ledger.insert_jobs([("k0", SPEC, "m")], "test")
    turn = turn_of(ledger)
    assert turn.waits == 0  # nobody else: the turn was free each time
    holders.append(Holder(db))
    inserting = asyncio.ensure_future(ledger.insert_jobs([("k1", SPEC, "m")], "test"))
    await until_waiting(turn, 1)
    # The write waits for the turn, not for SQLite's lock: that one is free.
    with sqlite3.connect(db, isolation_level=None, timeout=0) as other:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
    assert not inserting.done()
    holders[0].let_go()
    await inserting
    assert not turn._held and free_here(db)  # let go after the COMMIT
    # The hot path (a claim: one call to the connection's thread) too.
    holders.append(Holder(db))
    claiming = asyncio.ensure_future(ledger.claim_sendable(ME, limit=10, lease_seconds=60))
    await until_waiting(turn, 2)
    assert not claiming.done()
    holders[1].let_go()
    claimed = await claiming
    assert sorted(r.idem for r in claimed.rows) == ["k0", "k1"]
    assert not turn._held and free_here(db)
    await ledger.close()


async def test_a_holder_killed_lets_go_with_its_process(
    tmp_path: Path, holders: list[Holder]
) -> None:
    db = tmp_path / "l.db"
    ledger, inserting = await _held_insert(db, holders)
    holders[0].kill()
    await inserting
    assert _keys(db) == ["k1"]
    await ledger.close()


async def test_a_turn_held_past_busy_timeout_is_a_busy_ledger_and_leaks_nothing(
    tmp_path: Path, holders: list[Holder]
) -> None:
    db = tmp_path / "l.db"
    ledger, inserting = await _held_insert(db, holders, busy_timeout=0.2)
    turn = turn_of(ledger)
    with pytest.raises(LedgerBusyError, match="turn to write"):
        await inserting
    assert not turn._held
    # The given-up wait is still with the waiting thread; the holder goes, the
    # thread takes the lock for nobody and lets it go at once.
    holders[0].let_go()
    for _ in range(1000):
        if free_here(db):
            break
        await asyncio.sleep(0.005)
    assert free_here(db)
    await ledger.insert_jobs([("k2", SPEC, "m")], "test")  # and writes go on
    assert _keys(db) == ["k2"]
    assert free_here(db)
    await ledger.close()


async def test_a_cancelled_wait_leaves_no_lock_and_the_next_write_waits_behind_it(
    tmp_path: Path, holders: list[Holder]
) -> None:
    db = tmp_path / "l.db"
    ledger, inserting = await _held_insert(db, holders)
    turn = turn_of(ledger)
    inserting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await inserting
    # A write made while the cancelled wait is still with the thread waits
    # behind it (both wait on one open file: never beside it on the loop).
    second = asyncio.ensure_future(ledger.insert_jobs([("k2", SPEC, "m")], "test"))
    await until_waiting(turn, 2)
    assert not second.done()
    holders[0].let_go()
    await second
    assert _keys(db) == ["k2"]
    assert not turn._held and free_here(db)
    await ledger.close()


async def test_no_turn_where_no_lock_file_can_be_made(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    writer = await ledger_at(db)
    await writer.insert_jobs([("k1", SPEC, "m")], "test")
    await writer.close()
    os.unlink(str(db) + SUFFIX)
    reader = await open_ledger(db, clock=ManualClock(NOW), readonly=True)
    assert isinstance(reader, SqliteLedger) and reader._turn is None
    await reader.close()
    assert not Path(str(db) + SUFFIX).exists()  # a read-only open makes no file
    assert open_turn(str(tmp_path / "missing" / "l.db"), 1.0) is None
    memory = await open_ledger(":memory:", clock=ManualClock(NOW))
    assert isinstance(memory, SqliteLedger) and memory._turn is None
    await memory.insert_jobs([("k1", SPEC, "m")], "test")
    await memory.close()


@pytest.mark.parametrize("mode", [0o600, 0o660])
async def test_the_lock_file_has_the_ledgers_permissions(tmp_path: Path, mode: int) -> None:
    db = tmp_path / "l.db"
    await (await ledger_at(db)).close()
    os.unlink(str(db) + SUFFIX)
    os.chmod(db, mode)
    old = os.umask(0o077)
    try:
        ledger = await ledger_at(db)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(str(db) + SUFFIX).st_mode) == mode
    await ledger.close()


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from reclaim_tui.core.clock import ManualClock
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.models import JobSpec

    async def main(db, name):
        spec = JobSpec(input="a job", model="m").to_json()
        ledger = await open_ledger(db, clock=ManualClock(1.8e9))
        print("open", flush=True)
        sys.stdin.readline()
        for batch in range(40):
            keys = [(f"{name}-{batch}-{n}", spec, "m") for n in range(10)]
            await ledger.insert_jobs(keys, "test")
        print(ledger._turn.waits, flush=True)
        await ledger.close()

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    asyncio.run(_make(db))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        int(out.strip())  # the waits it counted: an int, printed after its last write
    with sqlite3.connect(db) as check:
        keys = {r[0] for r in check.execute("SELECT idem FROM jobs")}
    assert len(keys) == 800
    assert {k.split("-")[0] for k in keys} == {"a", "b"}


async def _make(db: Path) -> None:
    await (await ledger_at(db)).close()


@pytest.mark.parametrize("through", ["a link to the file", "a link to its folder"])
async def test_a_ledger_reached_through_a_symbolic_link_takes_its_real_files_turn(
    tmp_path: Path, holders: list[Holder], through: str
) -> None:
    """SQLite follows the links to place its `-wal` beside the real file: a
    process reaching the ledger by another path writes the same file, so it
    must take the same turn (it waited in SQLite's busy handler before)."""
    real = tmp_path / "real" / "l.db"
    real.parent.mkdir()
    await (await ledger_at(real)).close()
    if through == "a link to the file":
        link = tmp_path / "link.db"
        link.symlink_to(real)
    else:
        (tmp_path / "folder").symlink_to(real.parent)
        link = tmp_path / "folder" / "l.db"
    ledger = await ledger_at(link)
    holders.append(Holder(real))  # the process that opened the real path
    inserting = asyncio.ensure_future(ledger.insert_jobs([("k1", SPEC, "m")], "test"))
    await until_waiting(turn_of(ledger), 1)
    assert not inserting.done()
    holders[0].let_go()
    await inserting
    assert _keys(real) == ["k1"]
    # one lock file, beside the real one; none made beside the link
    assert [n for n in os.listdir(tmp_path) if n.endswith(SUFFIX)] == []
    assert [n for n in os.listdir(real.parent) if n.endswith(SUFFIX)] == ["l.db" + SUFFIX]
    await ledger.close()
