"""Ledger discipline: pragmas, migrations, version refusal, CAS under leases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, pid_space
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION
from reclaim_tui.core.models import Status, Transition
from reclaim_tui.errors import (
    LedgerCorruptError,
    LedgerError,
    LedgerReadOnlyError,
    LedgerVersionError,
)


async def test_pragmas_are_durable(ledger: Ledger) -> None:
    p = await ledger.pragmas()
    if ledger.dialect == "postgres":
        from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA_VERSION

        assert p["synchronous_commit"] == "on"
        assert p["lock_timeout"] == "10s"  # busy_timeout's meaning on a server
        assert await ledger.schema_version() == PG_SCHEMA_VERSION
        return
    assert p["journal_mode"] == "wal"
    assert p["synchronous"] == 2  # FULL
    assert p["busy_timeout"] == 10000
    assert await ledger.schema_version() == SCHEMA_VERSION


async def test_newer_schema_is_refused(db_url: str) -> None:
    from reclaim_tui.core.ledger.urls import is_database_url

    if is_database_url(db_url):  # a ledger, then its version from the future
        import psycopg

        from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA_VERSION

        await (await open_ledger(db_url)).close()
        with psycopg.connect(db_url, autocommit=True) as pg:
            pg.execute(
                "UPDATE reclaim_tui.meta SET value = %s WHERE key = 'schema'",
                (str(PG_SCHEMA_VERSION + 1),),
            )
    else:
        con = sqlite3.connect(db_url)
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        con.close()
    with pytest.raises(LedgerVersionError, match="newer reclaim-tui"):
        await open_ledger(db_url)


# SQLite only: a file's bytes that are not a database; a server has no such file.
async def test_corrupt_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(LedgerCorruptError):
        await open_ledger(path)
    assert path.read_bytes() == b"this is not sqlite" * 100


async def test_missing_ledger_readonly(db_url: str) -> None:
    # SQLite: no file; PostgreSQL: an empty database (no reclaim_tui schema).
    with pytest.raises(LedgerError, match="no ledger"):
        await open_ledger(db_url, readonly=True, create=False)


async def test_readonly_refuses_writes(db_url: str, clock: ManualClock) -> None:
    led = await open_ledger(db_url, clock=clock)
    await led.insert_jobs([("a1", "{}", "m")], "t")
    await led.close()
    ro = await open_ledger(db_url, readonly=True, create=False)
    try:
        with pytest.raises(LedgerReadOnlyError):
            await ro.insert_jobs([("a2", "{}", "m")], "t")
        assert (await ro.get("a1")) is not None
    finally:
        await ro.close()


async def test_insert_is_idempotent(ledger: Ledger) -> None:
    ins, present = await ledger.insert_jobs([("a", "{}", "m"), ("b", "{}", "m")], "t")
    assert ins == ["a", "b"] and present == []
    ins, present = await ledger.insert_jobs([("a", "{}", "m"), ("c", "{}", "m")], "t")
    assert ins == ["c"] and present == ["a"]


async def test_claim_is_exclusive_until_lease_expires(ledger: Ledger, clock: ManualClock) -> None:
    await ledger.insert_jobs([("a", "{}", "m")], "t")
    first = await ledger.claim_sendable("p1", limit=10, lease_seconds=60)
    second = await ledger.claim_sendable("p2", limit=10, lease_seconds=60)
    assert [r.idem for r in first.rows] == ["a"] and second.rows == []
    clock.advance(61)
    third = await ledger.claim_sendable("p2", limit=10, lease_seconds=60)
    assert [r.idem for r in third.rows] == ["a"]
    # p1 lost its lease: its compare-and-set changes nothing.
    stale = Transition("a", Status.RESERVING, Status.FAILED, "zombie write")
    assert await ledger.apply("p1", "t", [stale]) == []
    row = await ledger.get("a")
    assert row is not None and row.status == Status.RESERVING and row.lease_owner == "p2"
    assert "zombie write" not in [e.note for e in await ledger.events("a")]


async def test_dead_holder_lease_is_free_at_once(ledger: Ledger, clock: ManualClock) -> None:
    import socket

    await ledger.insert_jobs([("a", "{}", "m")], "t")
    # A pid that cannot exist on this host: provably dead.
    dead = str(LeaseOwner(socket.gethostname(), 4194304999, "12345", pid_space()))
    assert (await ledger.claim_sendable(dead, limit=1, lease_seconds=600)).rows
    got = await ledger.claim_sendable("p2", limit=1, lease_seconds=600)
    assert [r.idem for r in got.rows] == ["a"]
    # Another host's holder is never judged: only the clock frees it.
    await ledger.insert_jobs([("b", "{}", "m")], "t")
    other = "elsewhere|1|1"
    claimed = await ledger.claim_sendable(other, limit=1, lease_seconds=600)
    assert [r.idem for r in claimed.rows] == ["b"]
    assert not (await ledger.claim_sendable("p3", limit=1, lease_seconds=600)).rows


# SQLite only: the race is between SQLite's two reads at open (version, then
# tables); PgLedger migrates under an advisory lock and reads the version again.
async def test_a_file_migrated_by_another_process_mid_open_is_not_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI saw `not a reclaim-tui ledger (schema version 0, tables: events, …)`
    when eight ticks opened one new file at once: the open read the version
    (0), another process committed the whole migration, then the open read
    the table list (all ours). Both reads must come from one snapshot."""
    from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
    from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS, migration_statements

    path = tmp_path / "ledger.db"
    first = sqlite3.connect(path)
    first.execute("PRAGMA journal_mode = WAL")  # a new file another process began
    first.close()

    real = SqliteLedger.schema_version
    raced: list[int] = []

    async def racing(self: SqliteLedger) -> int:
        version = await real(self)
        if not raced:  # the other process migrates right after our first read
            raced.append(version)
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            for script in MIGRATIONS[:SCHEMA_VERSION]:
                for statement in migration_statements(script):
                    other.execute(statement)
            other.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            other.execute("COMMIT")
            other.close()
        return version

    monkeypatch.setattr(SqliteLedger, "schema_version", racing)
    ledger = await open_ledger(path)
    try:
        assert raced == [0]
        assert await ledger.schema_version() == SCHEMA_VERSION
    finally:
        await ledger.close()
