"""Other processes' live leases on PostgreSQL (`dead_holders`, asked at
every claim) are read from the lease holders' table, not from an index on
`jobs.lease_owner` (core/ledger/postgres/leases.py): with that index every
claim was an update that is not HOT, written into every index of `jobs`.
Here: the same owners as the shared statement, case by case, whichever way
the lease was written; a claim counted HOT by the server's own statistics;
an app role granted the rows before the upgrade; a ledger made by the code
before the table."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive, pid_space, this_process
from reclaim_tui.core.models import JobSpec
from tests.helpers.postgres import find_bin_dir

pytestmark = pytest.mark.postgres

NOW = 1_800_000_000.0
JOBS = 200
FIXTURE = Path(__file__).parent.parent / "fixtures" / "ledgers" / "postgres-v5-f77ae22.sql"

# The shared statement (core/ledger/base.py), the rule kept.
_SHARED = (
    "SELECT DISTINCT lease_owner FROM reclaim_tui.jobs WHERE lease_owner IS NOT NULL"
    " AND lease_until > %s AND lease_owner != %s"
)


def _gone(tag: str) -> str:
    """An owner on this host, in this pid space, whose pid is no process:
    provably dead (holder_alive is False)."""
    owner = str(LeaseOwner(socket.gethostname(), 4_194_304_000 + len(tag), tag, pid_space()))
    assert holder_alive(owner) is False
    return owner


def _expected(dsn: str, now: float, me: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        owners = sorted(r[0] for r in conn.execute(_SHARED, (now, me)).fetchall())
    return [owner for owner in owners if holder_alive(owner) is False]


async def _jobs(ledger: Any, n: int) -> list[str]:
    spec = JobSpec(input="a job", model="m").to_json()
    keys = [f"key-{i:05}" for i in range(n)]
    await ledger.insert_jobs([(key, spec, "m") for key in keys], "test")
    return keys


async def test_dead_holders_are_the_shared_statements_whichever_way_written(
    pg_dsn: str,
) -> None:
    clock = ManualClock(NOW)
    ledger = await open_ledger(pg_dsn, clock=clock)
    me, alive = _gone("me"), str(this_process("alive"))
    away = f"elsewhere|{os.getpid()}|1|{'0' * 16}.1"  # another host: never judged
    live, expired, released, renewed = (_gone(t) for t in ("live", "exp", "released", "renew"))
    try:
        await _jobs(ledger, 20)
        leases = [(me, NOW + 9), (alive, NOW + 9), (away, NOW + 9), (live, NOW + 9),
                  (live, NOW - 9), (expired, NOW - 1), (expired, NOW), (released, NOW + 9),
                  (renewed, NOW - 5)]  # fmt: skip
        async with ledger.write() as db:
            for n, (owner, until) in enumerate(leases):
                await db.execute(
                    "UPDATE jobs SET lease_owner = %s, lease_until = %s WHERE idem = %s",
                    (owner, until, f"key-{n:05}"),
                )
        async with ledger.write() as db:  # a release; a renewal (the heartbeat's shape)
            await db.execute("UPDATE jobs SET lease_owner = NULL, lease_until = 0 WHERE idem = %s",
                             ("key-00007",))  # fmt: skip
            await db.execute("UPDATE jobs SET lease_until = %s WHERE lease_owner = %s",
                             (NOW + 30, renewed))  # fmt: skip
            # a copied row: inserted with its lease
            await db.execute(
                "INSERT INTO jobs (idem, spec, model, status, lease_owner, lease_until,"
                " created_at, state_since, updated_at) SELECT 'copied', spec, model, status,"
                " %s, %s, created_at, state_since, updated_at FROM jobs WHERE idem = 'key-00010'",
                (_gone("copied"), NOW + 60),
            )
        ran: list[tuple[str, Sequence[Any]]] = []
        fetch = cast(Any, ledger)._fetchall

        async def recording(sql: str, params: Sequence[Any] = ()) -> list[Any]:
            ran.append((sql, params))
            return cast(list[Any], await fetch(sql, params))

        cast(Any, ledger)._fetchall = recording
        for at in (NOW, NOW + 10, NOW + 40, NOW + 61):
            clock.advance(at - clock.now())
            for asking in (me, alive, "nobody"):
                assert await ledger.dead_holders(asking) == _expected(pg_dsn, at, asking), (
                    at,
                    asking,
                )
        clock.advance(NOW - clock.now())
        ran.clear()
        assert await ledger.dead_holders(me) == sorted([live, renewed, _gone("copied")])
        # the holders' table read, then jobs for the owners found dead only
        (holders, _), (holding, (owners, _)) = ran
        assert "reclaim_lease_holders" in holders and "FROM jobs" in holding
        assert sorted(owners) == sorted([live, released, renewed, _gone("copied")])
    finally:
        await ledger.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        held = conn.execute("SELECT owner FROM reclaim_tui.lease_holders").fetchall()
        assert released in {r[0] for r in held}  # kept, and checked against jobs
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs' AND indexdef LIKE '%lease%'"
        ).fetchall()
        assert indexes == []


async def test_a_new_owner_forgets_the_owners_a_week_gone(pg_dsn: str) -> None:
    """The table bounds itself: an owner's first lease deletes the rows of
    owners whose leases ended more than a week before it; others stay."""
    week = 7 * 24 * 3600
    clock = ManualClock(NOW)
    ledger = await open_ledger(pg_dsn, clock=clock)
    try:
        await _jobs(ledger, 5)
        for owner, at in (("gone|4|d", NOW), ("old|1|a", NOW), ("recent|2|b", NOW + 2 * 86400)):
            clock.advance(at - clock.now())
            assert len((await ledger.claim_sendable(owner, limit=1, lease_seconds=30)).rows) == 1
        clock.advance(NOW + week + 60 - clock.now())
        assert len((await ledger.claim_sendable("old|1|a", limit=1, lease_seconds=30)).rows) == 1
        kept = await ledger.select("SELECT owner FROM lease_holders ORDER BY owner", [])
        assert [r[0] for r in kept] == ["gone|4|d", "old|1|a", "recent|2|b"]  # a known one: none
        assert len((await ledger.claim_sendable("new|3|c", limit=1, lease_seconds=30)).rows) == 1
        kept = await ledger.select("SELECT owner, until FROM lease_holders ORDER BY owner", [])
    finally:
        await ledger.close()
    later = NOW + week + 90
    assert [tuple(r) for r in kept] == [
        ("new|3|c", later), ("old|1|a", later), ("recent|2|b", NOW + 2 * 86400 + 30)
    ]  # fmt: skip


def _updates(dsn: str, want: int) -> tuple[int, int]:
    """(updates, HOT updates) of `jobs` once the server counted `want`
    updates: a closed connection's counts reach the statistics as its
    backend exits."""
    deadline = time.monotonic() + 60
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                " WHERE schemaname = 'reclaim_tui' AND relname = 'jobs'"
            ).fetchone()
            assert row is not None
            if row[0] >= want or time.monotonic() > deadline:
                return int(row[0]), int(row[1])
            time.sleep(0.05)


async def test_claims_are_hot_updates(pg_dsn: str) -> None:
    """A claim of every row of a submit, by an owner string as long as a
    real one: nearly every row's new version stays on its page, written in
    no index of `jobs` (on schema 5, none: the index on lease_owner). A
    page that a claim takes whole needs room for all its rows' new versions
    at once, the lease written in: the fill factor leaves half a page, and
    the few rows whose version does not fit go to another page."""
    ledger = await open_ledger(pg_dsn, clock=ManualClock(NOW))
    try:
        await _jobs(ledger, JOBS)
        claim = await ledger.claim_sendable(str(this_process("a")), limit=JOBS, lease_seconds=30)
        assert len(claim.rows) == JOBS
    finally:
        await ledger.close()
    updates, hot = _updates(pg_dsn, JOBS)
    assert updates == JOBS
    assert hot >= 0.8 * updates, f"{updates - hot} of {updates} claimed rows were not HOT updates"


async def test_a_role_not_granted_the_holders_table_claims_and_judges(pg_dsn: str) -> None:
    """The manual's DML grant run before the upgrade that added
    `lease_holders`: the role's claims still record their owner (the trigger
    writes as the schema's owner) and it reads the holders by the function."""
    await (await open_ledger(pg_dsn)).close()
    role = "holders_app"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA reclaim_tui TO {role}")
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reclaim_tui TO {role}"
        )
        admin.execute(f"GRANT SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA reclaim_tui TO {role}")
        admin.execute(f"REVOKE ALL ON reclaim_tui.lease_holders FROM {role}")
        app = psycopg.conninfo.make_conninfo(pg_dsn, user=role)
        dead = _gone("app")
        try:
            ledger = await open_ledger(app, clock=ManualClock(NOW))
            try:
                await _jobs(ledger, 3)
                claim = await ledger.claim_sendable(dead, limit=2, lease_seconds=30)
                assert len(claim.rows) == 2
                assert await ledger.dead_holders("me") == [dead]
                taken = await ledger.claim_sendable("host-b|2|b", limit=3, lease_seconds=30)
                assert len(taken.rows) == 3  # the dead holder's rows are free
            finally:
                await ledger.close()
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def _restore(dsn: str) -> None:
    subprocess.run(
        [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(FIXTURE), dsn],
        check=True,
        capture_output=True,
    )


async def test_a_ledger_made_before_the_holders_table_keeps_its_leases(pg_dsn: str) -> None:
    """The ledger f77ae22 made (schema 5, the index on lease_owner), its
    leases written by that schema: after the upgrade, a dead holder is
    found, its rows are free, and claims are HOT."""
    _restore(pg_dsn)
    dead = _gone("old")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM reclaim_tui.meta").fetchone() == ("5",)
        conn.execute(
            "UPDATE reclaim_tui.jobs SET lease_owner = %s, lease_until = %s"
            " WHERE idem IN ('k-cafe-1', 'k-tea')",
            (dead, NOW + 60),
        )
    ledger = await open_ledger(pg_dsn, clock=ManualClock(NOW))
    try:
        assert await ledger.schema_version() == 6
        assert await ledger.dead_holders("me") == [dead]
        claim = await ledger.claim_sendable("host-b|2|b", limit=10, lease_seconds=30)
        assert sorted(r.idem for r in claim.rows) == [
            "k-broken", "k-cafe-1", "k-cafe-2", "k-cafe-3", "k-tea"
        ]  # fmt: skip
        assert await ledger.dead_holders("me") == []
    finally:
        await ledger.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        options = conn.execute(
            "SELECT reloptions FROM pg_class WHERE oid = 'reclaim_tui.jobs'::regclass"
        ).fetchone()
        assert options is not None and options[0] == ["fillfactor=50"]
        indexes = conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'jobs'")
        names = {r[0] for r in indexes}
        assert "jobs_leased" not in names
