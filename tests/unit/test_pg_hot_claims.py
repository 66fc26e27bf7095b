"""A claim and a renewal on PostgreSQL change no indexed column of `jobs`
(schema migration 7: no index on the lease owner; the holders' probe reads
the lease horizons, core/ledger/postgres/holders.py), so on a page with room
they are HOT updates: no index entry at all. Before, every claim changed
the owner's indexed column and wrote a new entry into each of the seven
indexes of `jobs`.

Counted from the WAL (pg_walinspect): the heap's UPDATE and HOT_UPDATE
records on `jobs` and the btree leaf inserts into its indexes over a keyed
claim, a renewal and a shared claim (another owner's, once the first
lease ran out). A ledger the previous code made (schema 6,
tests/fixtures/ledgers/) with a lease on it is upgraded by its owner: its
holder gets a horizon, so a claim (by an app role granted table by table
before the upgrade, which the migration grants the new table) still frees
the rows of a holder provably gone, and the indexes are a new ledger's.
The registry's prune drops horizons long run out, and no live one.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive, this_process
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA, PG_SCHEMA_VERSION
from reclaim_tui.core.ledger.registry import RETENTION, Beacon
from reclaim_tui.core.models import JobSpec
from tests.helpers.pg_wal import readable_wal_end
from tests.helpers.postgres import PostgresServer, find_bin_dir

pytestmark = pytest.mark.postgres

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
ROWS = 10  # one heap page, with room
APP = f"hot_app_{os.getpid()}"
READER = f"hot_reader_{os.getpid()}"


def as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path, "", ""))


def _records(conn: psycopg.Connection[Any], start: str) -> Counter[str]:
    """WAL records since `start` on `jobs` (by record type) and its indexes
    (btree leaf inserts, as "index")."""
    names = dict(
        conn.execute(
            "SELECT pg_relation_filenode(c.oid)::text, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_index x ON x.indexrelid = c.oid"
            " LEFT JOIN pg_class t ON t.oid = x.indrelid"
            " WHERE n.nspname = %s AND (c.relname = 'jobs' OR t.relname = 'jobs')",
            (PG_SCHEMA,),
        ).fetchall()
    )
    found: Counter[str] = Counter()
    for rmgr, kind, block_ref in conn.execute(
        "SELECT resource_manager, record_type, block_ref"
        " FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)",
        (start, readable_wal_end(conn)),
    ):
        node = re.search(r"rel \d+/\d+/(\d+)", block_ref or "")
        if not node or names.get(node.group(1)) is None:
            continue
        if names[node.group(1)] == "jobs" and rmgr == "Heap":
            found[kind] += 1
        elif rmgr == "Btree" and kind in ("INSERT_LEAF", "INSERT_POST"):
            found["index"] += 1
    return found


def _lsn(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public")
        return str(conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])  # type: ignore[index]


async def _claims_and_renewal(dsn: str, clock: ManualClock, keys: list[str]) -> str:
    """A keyed claim, a renewal, then another owner's shared claim; the WAL
    position before them."""
    ledger = await open_ledger(dsn, clock=clock)
    try:
        start = _lsn(dsn)
        first = await ledger.claim_sendable("host-a|1|x", limit=ROWS, lease_seconds=30, idems=keys)
        assert len(first.rows) == ROWS
        assert await ledger.renew("host-a|1|x", keys, 60) == set(keys)
        clock.advance(61)
        second = await ledger.claim_sendable("host-b|2|y", limit=ROWS, lease_seconds=30)
        assert sorted(r.idem for r in second.rows) == sorted(keys)
        return start
    finally:
        await ledger.close()


def test_a_claim_and_a_renewal_are_hot_updates(pg_dsn: str) -> None:
    clock = ManualClock()
    keys = [f"key-{i}" for i in range(ROWS)]
    spec = JobSpec(input="a job", model="m").to_json()

    async def made() -> None:
        ledger = await open_ledger(pg_dsn, clock=clock)
        try:
            await ledger.insert_jobs([(k, spec, "m") for k in keys], "test")
        finally:
            await ledger.close()

    asyncio.run(made())
    start = asyncio.run(_claims_and_renewal(pg_dsn, clock, keys))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET search_path = public")
        found = _records(conn, start)
    # Three updates of each row, every one HOT: no new entry in any index.
    assert found["HOT_UPDATE"] == 3 * ROWS, found
    assert found["UPDATE"] == 0 and found["index"] == 0, found


def _indexes(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = %s"
            " AND tablename IN ('jobs', 'lease_horizons') ORDER BY 1, 2",
            (PG_SCHEMA,),
        ).fetchall()
    return [(str(name), str(text)) for _, name, text in rows]


def test_a_ledger_the_previous_code_made_keeps_its_holders(
    pg_dsn: str, pg_server: PostgresServer
) -> None:
    (dump,) = FIXTURES.glob("postgres-v6-*.sql")
    old = pg_server.create_database(f"old_v6_{os.getpid()}")
    me = this_process()
    gone = str(LeaseOwner(me.host, me.pid, "1", me.space))  # this pid, another start
    assert holder_alive(gone) is False
    clock = ManualClock()
    try:
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), old],
            check=True,
            capture_output=True,
        )
        assert "jobs_leased" in dict(_indexes(old))
        with psycopg.connect(old, autocommit=True) as conn:
            # Leases as the previous code's claims left them: a gone holder's
            # (live by the clock) and another host's.
            conn.execute(f"SET search_path = {PG_SCHEMA}")
            for idem, owner, until in (
                ("k-tea", gone, clock.now() + 600),
                ("k-cafe-1", gone, clock.now() + 300),
                ("k-cafe-2", "another-host|1|z", clock.now() + 600),
            ):
                conn.execute(
                    "UPDATE jobs SET lease_owner = %s, lease_until = %s WHERE idem = %s",
                    (owner, until, idem),
                )

            # An app role granted table by table, before the upgrade.
            conn.execute(f"CREATE ROLE {APP} LOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA {PG_SCHEMA} TO {APP}")
            conn.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {PG_SCHEMA} TO {APP}"
            )
            # And a role that only reads (`status`, a monitor).
            conn.execute(f"CREATE ROLE {READER} LOGIN")
            conn.execute(f"GRANT USAGE ON SCHEMA {PG_SCHEMA} TO {READER}")
            conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {PG_SCHEMA} TO {READER}")

        async def upgraded_and_claimed(dsn: str) -> list[Any]:
            ledger = await open_ledger(dsn, clock=clock)  # the owner's: it upgrades
            try:
                version = await ledger.schema_version()
                horizons = await cast(Any, ledger)._fetchall(
                    "SELECT owner, until FROM lease_horizons ORDER BY owner"
                )
            finally:
                await ledger.close()
            ledger = await open_ledger(as_role(dsn, APP), clock=clock)  # the app role claims
            try:
                claim = await ledger.claim_sendable(str(me), limit=10, lease_seconds=30)
                return [version, horizons, sorted(r.idem for r in claim.rows)]
            finally:
                await ledger.close()

        version, horizons, claimed = asyncio.run(upgraded_and_claimed(old))
        assert version == PG_SCHEMA_VERSION == 7
        assert [tuple(h) for h in horizons] == sorted(
            [("another-host|1|z", clock.now() + 600), (gone, clock.now() + 600)]
        )
        # Every row but the live other host's: the gone holder's two at once.
        assert claimed == ["k-broken", "k-cafe-1", "k-cafe-3", "k-tea"]
        with psycopg.connect(old, autocommit=True) as conn:
            rights = conn.execute(
                "SELECT r, p, has_table_privilege(r, %s, p) FROM unnest(%s::text[]) AS r,"
                " unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) AS p ORDER BY 1, 2",
                (f"{PG_SCHEMA}.lease_horizons", [APP, READER]),
            ).fetchall()
        assert {(r, p) for r, p, granted in rights if granted} == {
            (APP, "DELETE"), (APP, "INSERT"), (APP, "SELECT"), (APP, "UPDATE"), (READER, "SELECT")
        }  # fmt: skip
        asyncio.run(_fresh(pg_dsn))
        assert _indexes(old) == _indexes(pg_dsn)
        assert "jobs_leased" not in dict(_indexes(old))
    finally:
        pg_server.drop_database(urlsplit(old).path[1:])
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP ROLE IF EXISTS {APP}")
            conn.execute(f"DROP ROLE IF EXISTS {READER}")


async def _fresh(dsn: str) -> None:
    await (await open_ledger(dsn, clock=ManualClock())).close()


def test_the_registry_prunes_the_horizons_long_run_out(pg_dsn: str) -> None:
    clock = ManualClock()
    now = clock.now()

    async def pruned() -> list[Any]:
        ledger = await open_ledger(pg_dsn, clock=clock)
        try:
            async with ledger.write() as db:
                for owner, until in (
                    ("old|1|a", now - RETENTION - 1),
                    ("recent|2|b", now - RETENTION + 1),
                    ("live|3|c", now + 30),
                ):
                    await db.execute(
                        "INSERT INTO lease_horizons(owner, until) VALUES (%s, %s)", (owner, until)
                    )
            await Beacon(ledger, "me|4|d", "tick").start()
            return cast(
                list[Any],
                await cast(Any, ledger)._fetchall("SELECT owner FROM lease_horizons ORDER BY 1"),
            )
        finally:
            await ledger.close()

    assert [r[0] for r in asyncio.run(pruned())] == ["live|3|c", "recent|2|b"]


def test_leases_copied_from_another_ledger_get_their_horizons(pg_dsn: str) -> None:
    clock = ManualClock()
    now = clock.now()

    async def copied() -> list[Any]:
        ledger = await open_ledger(pg_dsn, clock=clock)
        try:
            spec = JobSpec(input="a job", model="m").to_json()
            await ledger.insert_jobs([(k, spec, "m") for k in ("k1", "k2", "k3")], "test")
            # Rows as a copy writes them (core/ledger/transfer.py): leases
            # and all, with no claim made here.
            async with ledger.write() as db:
                for idem, owner, until in (("k1", "x|1|a", now + 50), ("k2", "x|1|a", now + 90)):
                    await db.execute(
                        "UPDATE jobs SET lease_owner = %s, lease_until = %s WHERE idem = %s",
                        (owner, until, idem),
                    )
            await cast(Any, ledger).after_copy()
            return cast(
                list[Any],
                await cast(Any, ledger)._fetchall("SELECT owner, until FROM lease_horizons"),
            )
        finally:
            await ledger.close()

    assert [tuple(r) for r in asyncio.run(copied())] == [("x|1|a", now + 90)]
