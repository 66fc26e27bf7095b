"""The SQLite ledger's hot writes run a whole transaction in one call to
aiosqlite's thread (core/ledger/sqlite/hot_writes.py; issue 39, fourth
pass). What that must keep: an error anywhere inside rolls it back there;
a cancelled caller leaves no transaction open: one not yet committed is
rolled back, one that commits gives its leases back, and the service's
generation is known either way — the write lock is held until the thread
is done, so the next check or write sees it;
a ledger put back under the service refuses the write, keeping nothing."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.compare_and_set import result_params
from reclaim_tui.core.ledger.identity import LedgerReplacedError
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite import generation, hot_writes, thread_writes
from reclaim_tui.core.ledger.sqlite.aiosqlite_private import in_thread
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_BATCH
from reclaim_tui.core.models import (
    Actor,
    JobSpec,
    RemoteInteraction,
    RemoteState,
    Status,
    Transition,
)
from reclaim_tui.errors import LedgerError

NOW = 1_800_000_000.0
ME = "host-a|100|me"
SPEC = JobSpec(input="a job", model="m").to_json()


async def _ledger(path: Path) -> SqliteLedger:
    ledger = await open_ledger(path, clock=ManualClock(NOW))
    assert isinstance(ledger, SqliteLedger)
    await ledger.insert_jobs([(f"k{n}", SPEC, "m") for n in range(6)], "test")
    return ledger


def _leased(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT idem FROM jobs WHERE lease_owner = ? ORDER BY idem", (ME,))
        return [r[0] for r in rows]


def _generation(path: Path) -> str:
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (generation.key_for(ME),))
        return str(row.fetchone()[0])


def _events(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])


async def test_a_caller_cancelled_before_its_turn_leaves_nothing(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await _ledger(db)
    try:
        await ledger.guard_generation(ME)
        gate = threading.Event()
        blocked = in_thread(ledger.connection, gate.wait)  # the thread is busy
        claim = asyncio.ensure_future(ledger.claim_sendable(ME, limit=3, lease_seconds=60))
        await asyncio.sleep(0)  # one step of the claim: it takes the lock, queues its call
        assert ledger._lock.locked()
        claim.cancel()
        # Asked while the cancelled claim's call is still queued: it waits
        # for the thread to be done with it.
        check = asyncio.ensure_future(ledger.generation_change())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not check.done()  # the lock is still the thread's
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await claim
        assert await blocked is True
        assert await check is None
        assert not ledger.connection.in_transaction
        assert _leased(db) == [] and _generation(db) == "0"  # never begun, nothing committed
        again = await ledger.claim_sendable(ME, limit=3, lease_seconds=60)
        assert [r.idem for r in again.rows] == ["k0", "k1", "k2"]
        assert await ledger.generation_change() is None
    finally:
        gate.set()  # a failed assert must not leave the thread blocked
        await ledger.close()


class _SlowCommit:
    """A connection whose COMMIT waits for the test (`go`) after saying it
    is there (`at`)."""

    def __init__(self, conn: sqlite3.Connection, at: threading.Event, go: threading.Event):
        self._real, self._at, self._go = conn, at, go

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT":
            self._at.set()
            self._go.wait()
        return self._real.execute(sql, *args)

    @property
    def in_transaction(self) -> bool:
        return self._real.in_transaction

    @property
    def total_changes(self) -> int:
        return self._real.total_changes


async def test_a_caller_cancelled_while_it_commits_gives_its_leases_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "l.db"
    ledger = await _ledger(db)
    at, go = threading.Event(), threading.Event()
    try:
        await ledger.guard_generation(ME)
        real_raw = hot_writes.raw
        monkeypatch.setattr(hot_writes, "raw", lambda c: _SlowCommit(real_raw(c), at, go))
        claim = asyncio.ensure_future(ledger.claim_sendable(ME, limit=3, lease_seconds=60))
        # the claim ran; its COMMIT is under way (or the claim failed first)
        await asyncio.wait({claim, asyncio.ensure_future(asyncio.to_thread(at.wait, 60))},
                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        assert at.is_set(), claim.exception() if claim.done() else "no COMMIT in 60 s"
        claim.cancel()
        check = asyncio.ensure_future(ledger.generation_change())
        for _ in range(5):
            await asyncio.sleep(0)
        assert not check.done()
        go.set()
        with pytest.raises(asyncio.CancelledError):
            await claim
        monkeypatch.undo()
        assert await check is None  # both commits' generations are known
        assert not ledger.connection.in_transaction
        # committed, and given back (a commit of its own): nobody would act on them
        assert _leased(db) == [] and _generation(db) == "2"
        again = await ledger.claim_sendable(ME, limit=3, lease_seconds=60)
        assert [r.idem for r in again.rows] == ["k0", "k1", "k2"]
        assert await ledger.generation_change() is None
    finally:
        at.set()  # a failed assert must not leave a thread blocked
        go.set()
        await ledger.close()


async def test_an_error_inside_rolls_the_whole_transaction_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "l.db"
    ledger = await _ledger(db)
    try:
        claim = await ledger.claim_sendable(ME, limit=2, lease_seconds=60)
        events = _events(db)
        real = thread_writes.run

        def fails_after(conn: sqlite3.Connection, batch: Any) -> Any:
            real(conn, batch)  # every statement ran: the moves, events, the claim
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(thread_writes, "run", fails_after)
        moves = [
            Transition(r.idem, Status.RESERVING, Status.SUBMITTED, "created", {"handle": r.idem})
            for r in claim.rows
        ]
        with pytest.raises(LedgerError):
            await ledger.write_and_claim_sendable(
                ME,
                Actor.TICK,
                sending=[r.idem for r in claim.rows],
                transitions=moves,
                limit=4,
                lease_seconds=60,
            )
        monkeypatch.undo()
        assert not ledger.connection.in_transaction
        assert _events(db) == events  # no event of it
        assert _leased(db) == ["k0", "k1"]  # no claim of it
        rows = [await ledger.get(r.idem) for r in claim.rows]
        assert all(r is not None and r.status is Status.RESERVING and r.attempts == 0 for r in rows)
        _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=moves)
        assert sorted(applied) == ["k0", "k1"]  # and the connection writes on
    finally:
        await ledger.close()


async def test_a_ledger_put_back_refuses_a_hot_write_and_keeps_nothing(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await _ledger(db)
    try:
        backup = tmp_path / "backup.db"
        with sqlite3.connect(db) as live, sqlite3.connect(backup) as copy:
            live.backup(copy)
        await ledger.guard_generation(ME)
        await ledger.claim_sendable(ME, limit=1, lease_seconds=60)
        with sqlite3.connect(backup) as copy, sqlite3.connect(db) as live:
            copy.backup(live)  # the ledger as it was before the service started
        events = _events(db)
        with pytest.raises(LedgerReplacedError):
            await ledger.claim_sendable(ME, limit=3, lease_seconds=60)
        assert not ledger.connection.in_transaction
        assert _leased(db) == [] and _events(db) == events
        assert await ledger.generation_change() is not None
    finally:
        await ledger.close()


async def test_a_group_commits_events_and_results_are_one_insert_each(tmp_path: Path) -> None:
    """Not a statement per row: one multi-row INSERT of the batch's events
    (the marks' and the moves') and one of its results."""
    db = tmp_path / "l.db"
    clock = ManualClock(NOW)
    ledger = await open_ledger(db, clock=clock)
    assert isinstance(ledger, SqliteLedger)
    try:
        await ledger.insert_jobs([(f"k{n:02d}", SPEC, "m") for n in range(20)], "test")
        claim = await ledger.claim_sendable(ME, limit=20, lease_seconds=60)
        keys = [r.idem for r in claim.rows]
        marked, _ = await ledger.write_batch(ME, Actor.TICK, sending=keys)
        assert len(marked) == 20
        submitted = [
            Transition(
                k,
                Status.RESERVING,
                Status.SUBMITTED,
                "created",
                {"handle": f"h-{k}", "inflight": 0},
            )
            for k in keys
        ]
        await ledger.write_batch(ME, Actor.TICK, transitions=submitted)
        clock.advance(3600)  # their first polls are due
        held = await ledger.claim_pollable(ME, limit=20, lease_seconds=60)
        assert len(held.rows) == 20
        begun: list[str] = []
        await ledger.connection.set_trace_callback(begun.append)
        result = RemoteInteraction(
            "i", RemoteState.COMPLETED, "completed", "out", {"t": 1}, raw={"id": "i"}
        )
        done = [
            Transition(k, Status.SUBMITTED, Status.DONE, "completed", result=result) for k in keys
        ]
        _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=done)
        await ledger.connection.set_trace_callback(None)
        assert sorted(applied) == keys
        assert sum(s.startswith("INSERT INTO events") for s in begun) == 1, begun
        assert sum(s.startswith("INSERT INTO results") for s in begun) == 1, begun
        with sqlite3.connect(db) as raw:
            got = raw.execute(
                "SELECT e.idem, e.to_status, e.job = j.id FROM events AS e JOIN jobs AS j"
                " ON j.idem = e.idem WHERE e.to_status = 'done' ORDER BY e.id"
            ).fetchall()
            stored = raw.execute('SELECT COUNT(*) FROM results WHERE raw_json = \'{"id": "i"}\'')
            assert stored.fetchone()[0] == 20
        assert got == [(k, "done", 1) for k in keys]  # in the batch's order, each by its id
    finally:
        await ledger.close()


def test_a_results_usage_is_encoded_without_a_new_encoder_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The usage's JSON is `json.dumps(usage, sort_keys=True)`'s text, by an
    encoder made once, not one built per stored result."""
    results = [
        RemoteInteraction(
            f"i{n}", RemoteState.COMPLETED, "completed", "out", {"out": n, "in": 1}, raw={}
        )
        for n in range(20)
    ]
    for r in results:
        r.raw_json()  # made once and kept by the interaction itself
    made: list[object] = []
    real = json.JSONEncoder.__init__

    def counted(self: json.JSONEncoder, *args: Any, **kw: Any) -> None:
        made.append(self)
        real(self, *args, **kw)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counted)
    values = [result_params(r.id, r, NOW) for r in results]
    monkeypatch.undo()
    assert made == []
    assert [v[3] for v in values] == [json.dumps(r.usage, sort_keys=True) for r in results]


async def test_rows_queued_for_the_text_index_are_counted_under_the_lock(
    tmp_path: Path,
) -> None:
    """A write waiting for the lock does not count its rows before it has
    it: the write ahead of it, moving the queue, would reset them away."""
    ledger = await _ledger(tmp_path / "l.db")
    try:
        gate = threading.Event()
        blocked = in_thread(ledger.connection, gate.wait)
        ledger._search_queued = SEARCH_BATCH  # the next write moves the queue
        first = asyncio.ensure_future(ledger.write_batch(ME, Actor.TICK))
        await asyncio.sleep(0)
        assert ledger._lock.locked()
        moved = Transition("k0", Status.RESERVING, Status.SUBMITTED, "created", {"handle": "h"})
        second = asyncio.ensure_future(ledger.write_batch(ME, Actor.TICK, transitions=[moved]))
        await asyncio.sleep(0)  # the second waits for the lock
        gate.set()
        await first
        await second
        assert await blocked is True
        assert ledger._search_queued == 1  # the second's row, counted after the move
    finally:
        gate.set()  # a failed assert must not leave the thread blocked
        await ledger.close()
