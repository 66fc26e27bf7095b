"""Issue 40 item 3, in the ledger: a service's generation on ledgers the old
code made (tests/fixtures/ledgers/: no schema change, the row lives in
`meta`, which migration 6 made), and what ends it.

- each commit of the guarded ledger bumps the row; a check reads it;
- an older copy restored through SQLite's backup API is seen at the next
  check and refused by the next commit (nothing of it is kept);
- VACUUM and a truncating checkpoint keep it;
- a clean close removes the row.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reclaim_tui.core.ledger.identity import LedgerReplacedError
from reclaim_tui.core.ledger.opening import open_ledger

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
OWNER = "host|1|test"


def _from_dump(dump: Path, db: Path) -> None:
    conn = sqlite3.connect(db)
    conn.executescript(dump.read_text(encoding="utf-8"))
    conn.close()


def _meta(db: Path) -> dict[str, str]:
    conn = sqlite3.connect(db)
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    finally:
        conn.close()


@pytest.mark.parametrize("dump", sorted(FIXTURES.glob("sqlite-v*.sql")), ids=lambda p: p.stem)
async def test_a_restore_into_an_old_ledger_is_seen_and_refused(dump: Path, tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    _from_dump(dump, db)
    ledger = await open_ledger(str(db))
    try:
        await ledger.insert_jobs([("before", '{"input": "x", "model": "m"}', "m")], "t")
        backup = tmp_path / "backup.db"
        with sqlite3.connect(db) as live, sqlite3.connect(backup) as copy:
            live.backup(copy)  # before the service started: no row of it
        await ledger.guard_generation(OWNER)
        for n in range(3):
            await ledger.insert_jobs([(f"k{n}", '{"input": "x", "model": "m"}', "m")], "t")
            assert await ledger.generation_change() is None
        assert _meta(db)[f"generation:{OWNER}"] == "3"

        with sqlite3.connect(backup) as copy, sqlite3.connect(db) as live:
            copy.backup(live)  # `sqlite3 ledger.db ".restore backup.db"`
        change = await ledger.generation_change()
        assert change is not None and "this service's commits" in change
        with pytest.raises(LedgerReplacedError):
            await ledger.insert_jobs([("after", '{"input": "x", "model": "m"}', "m")], "t")
        idems = {r[0] for r in await ledger.select("SELECT idem FROM jobs")}
        assert "before" in idems and not idems & {"k0", "k1", "k2", "after"}  # none written
    finally:
        await ledger.close()
    assert f"generation:{OWNER}" not in _meta(db)  # a lost ledger is not written to on close


async def test_a_clean_close_removes_the_row_and_vacuum_keeps_it(tmp_path: Path) -> None:
    db = tmp_path / "ledger.db"
    ledger = await open_ledger(str(db))
    try:
        await ledger.guard_generation(OWNER)
        await ledger.insert_jobs([("k", '{"input": "x", "model": "m"}', "m")], "t")
        with sqlite3.connect(db, isolation_level=None) as other:
            other.execute("VACUUM")
            other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert await ledger.generation_change() is None
        await ledger.insert_jobs([("k2", '{"input": "x", "model": "m"}', "m")], "t")
        assert _meta(db)[f"generation:{OWNER}"] == "2"
    finally:
        await ledger.close()
    assert f"generation:{OWNER}" not in _meta(db)


async def test_a_claim_that_finds_nothing_writes_nothing(tmp_path: Path) -> None:
    """An idle service claims every pass and finds nothing: no WAL frame,
    no sync, and its generation stays where it was. A claim that takes a row
    bumps it as any other write."""
    db = tmp_path / "ledger.db"
    wal = tmp_path / "ledger.db-wal"
    ledger = await open_ledger(str(db))
    try:
        await ledger.guard_generation(OWNER)
        await ledger.insert_jobs([("k", '{"input": "x", "model": "m"}', "m")], "t")
        taken = await ledger.claim_sendable(OWNER, limit=10, lease_seconds=60)
        assert [r.idem for r in taken.rows] == ["k"]
        assert _meta(db)[f"generation:{OWNER}"] == "2"
        size = wal.stat().st_size
        for _ in range(5):
            nothing = await ledger.claim_sendable(OWNER, limit=10, lease_seconds=60)
            assert not nothing.rows
            assert not (await ledger.claim_pollable(OWNER, limit=10, lease_seconds=60)).rows
        assert wal.stat().st_size == size
        assert _meta(db)[f"generation:{OWNER}"] == "2"
        assert await ledger.generation_change() is None
        await ledger.insert_jobs([("k2", '{"input": "x", "model": "m"}', "m")], "t")
        assert _meta(db)[f"generation:{OWNER}"] == "3"
        assert await ledger.generation_change() is None
    finally:
        await ledger.close()


async def test_a_write_cancelled_twice_while_it_commits_keeps_its_generation_known(
    tmp_path: Path,
) -> None:
    """A write cancelled while its COMMIT waits in aiosqlite's queue, then
    cancelled again while it rolls back: the COMMIT went through, and the
    lock is not let go before the generation it moved to is read back, or
    the next write would take the ledger for a replaced one."""
    import asyncio
    import threading

    from reclaim_tui.core.ledger.sqlite.aiosqlite_private import in_thread
    from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger

    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    assert isinstance(ledger, SqliteLedger)
    gate = threading.Event()
    try:
        await ledger.guard_generation(OWNER)
        real = ledger._bump_generation
        blocked: list[asyncio.Task[bool]] = []
        at_commit = asyncio.Event()

        async def bump_then_block() -> None:
            await real()
            blocked.append(in_thread(ledger.connection, gate.wait))
            at_commit.set()
            await asyncio.sleep(0)  # the gate is queued: the COMMIT waits behind it

        ledger._bump_generation = bump_then_block  # type: ignore[method-assign]
        write = asyncio.ensure_future(
            ledger.insert_jobs([("k0", '{"input": "x", "model": "m"}', "m")], "t")
        )
        await asyncio.wait_for(at_commit.wait(), 30)
        ledger._bump_generation = real  # type: ignore[method-assign]
        for _ in range(3):
            await asyncio.sleep(0)  # the write awaits its COMMIT
        write.cancel()
        for _ in range(3):
            await asyncio.sleep(0)  # it queued its ROLLBACK and waits for it
        write.cancel()
        for _ in range(3):
            await asyncio.sleep(0)
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await write
        assert await blocked[0] is True
        assert _meta(tmp_path / "ledger.db")[f"generation:{OWNER}"] == "1"  # it committed
        assert await ledger.generation_change() is None
        claimed = await ledger.claim_sendable(OWNER, limit=3, lease_seconds=60)
        assert [r.idem for r in claimed.rows] == ["k0"]
    finally:
        gate.set()
        await ledger.close()
