"""How SQLite's one-call hot transactions (core/ledger/sqlite/hot_writes.py)
end when something else does: their task cancelled by asyncio.run's
clean-up while the thread commits, and a COMMIT that fails after the text
index's queue was moved in the transaction."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_BATCH
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.errors import LedgerError

NOW = 1_800_000_000.0
ME = "host-a|100|me"


class _Conn:
    """The ledger's sqlite3 connection, with `on_commit` run in the
    connection's thread as each COMMIT starts; `ended` is set when one ends."""

    def __init__(self, real: sqlite3.Connection, on_commit: Callable[[], None]) -> None:
        self._real = real
        self._on_commit = on_commit
        self.ended = threading.Event()

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql.strip().upper() != "COMMIT":
            return self._real.execute(sql, *args)
        try:
            self._on_commit()
            return self._real.execute(sql, *args)
        finally:
            self.ended.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _swap(ledger: SqliteLedger, on_commit: Callable[[], None]) -> tuple[_Conn, Callable[[], None]]:
    """Route the ledger's connection through _Conn; returns it and the undo."""
    db: Any = ledger.connection
    real = db._connection
    db._connection = conn = _Conn(real, on_commit)

    def undo() -> None:
        db._connection = real

    return conn, undo


async def _seeded(db: Path, jobs: int) -> SqliteLedger:
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    assert isinstance(ledger, SqliteLedger)
    spec = JobSpec(input="a job", model="m").to_json()
    await ledger.insert_jobs([(f"k{n}", spec, "m") for n in range(jobs)], "test")
    return ledger


def _leased(db: Path) -> int:
    with closing(sqlite3.connect(db)) as con:
        return int(
            con.execute("SELECT COUNT(*) FROM jobs WHERE lease_owner = ?", (ME,)).fetchone()[0]
        )


def test_a_claim_whose_task_asyncio_run_cancels_gives_its_leases_back(tmp_path: Path) -> None:
    """asyncio.run's clean-up cancels every task left, the claim's call to
    the thread among them, while the thread is at COMMIT: the claim commits,
    and its caller must still learn so and give the rows back."""
    db = tmp_path / "l.db"
    kept: list[tuple[SqliteLedger, _Conn]] = []
    go = threading.Event()

    async def main() -> None:
        ledger = await _seeded(db, 3)
        loop = asyncio.get_running_loop()
        at_commit = asyncio.Event()

        def on_commit() -> None:
            loop.call_soon_threadsafe(at_commit.set)
            assert go.wait(60), "the clean-up never cancelled the tasks"

        conn, _ = _swap(ledger, on_commit)
        kept.append((ledger, conn))

        async def let_commit_on_cancel() -> None:
            try:
                await asyncio.Event().wait()
            finally:  # cancelled by the clean-up with the others
                go.set()

        left = [  # left running: asyncio.run's clean-up cancels them
            asyncio.create_task(ledger.claim_sendable(ME, limit=10, lease_seconds=600)),
            asyncio.create_task(let_commit_on_cancel()),
        ]
        await at_commit.wait()
        assert not any(t.done() for t in left)
        # main returns with the claim's thread at COMMIT: asyncio.run cancels the rest

    asyncio.run(main())
    [(ledger, conn)] = kept
    try:
        assert go.is_set() and conn.ended.wait(60)  # the claim's COMMIT is over
        assert _leased(db) == 0
        with closing(sqlite3.connect(db)) as con:
            assert con.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 3
    finally:
        # bounded: a connection whose thread died with the loop never closes
        asyncio.run(asyncio.wait_for(ledger.close(), 60))

    # the write lock and the transaction were let go: another writer gets in
    async def again() -> None:
        other = await open_ledger(db, clock=ManualClock(NOW), busy_timeout=1.0)
        try:
            claim = await other.claim_sendable(ME, limit=10, lease_seconds=600)
            assert len(claim.rows) == 3
        finally:
            await other.close()

    asyncio.run(again())


async def _batch(ledger: SqliteLedger) -> None:
    await ledger.write_batch(ME, Actor.TICK)


async def _write(ledger: SqliteLedger) -> None:
    async with ledger.write():
        pass


def _top(db: Path) -> int:
    with closing(sqlite3.connect(db)) as con:
        return int(con.execute("SELECT top FROM jobs_fts_top").fetchone()[0])


@pytest.mark.parametrize("write", [_batch, _write], ids=["one-call", "write"])
async def test_a_failed_commit_leaves_the_text_index_move_due(
    tmp_path: Path, write: Callable[[SqliteLedger], Any]
) -> None:
    db = tmp_path / "l.db"
    ledger = await _seeded(db, 5)
    try:
        ledger.queued_for_search(SEARCH_BATCH)  # the next write moves the rows in
        assert _top(db) == 0

        def fail() -> None:
            raise sqlite3.OperationalError("disk I/O error")

        _, undo = _swap(ledger, fail)
        with pytest.raises(LedgerError, match="disk I/O error"):
            await write(ledger)
        undo()
        assert _top(db) == 0  # rolled back: nothing moved
        await write(ledger)
        assert _top(db) == 5  # the move is still due, and done now
    finally:
        await ledger.close()
