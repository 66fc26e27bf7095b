"""A job writes into the handle's and the due index of `jobs` on PostgreSQL
only the row versions those indexes are searched for (schema migration 6,
core/ledger/postgres/schema.py `INDEX_ENTRIES`).

Every update that is not HOT writes an entry into each index of `jobs`
whose predicate its new version meets. Counted here from the WAL
(pg_walinspect: each btree leaf insert is one record) over jobs driven
through every state as benchmarks/ledger_only.py drives them. Before the
migration a job wrote about six entries into each (its insert and every
non-HOT update: two claims, submitted, done, consumed); now the handle's
index skips the insert's version (no handle yet) and the due index the
`consumed` one. (Since migration 7 a claim changes no indexed column and is
HOT where its page has room: tests/unit/test_pg_hot_claims.py.)

And the searches keep seeking: every claim's selection, a lookup by a
handle and the console's "next poll" page of an active status read their
index on 20,000 rows (EXPLAIN), and a ledger the previous code made (schema
5, tests/fixtures/ledgers/) is upgraded to exactly the indexes a new one has.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.claim_writes import pollable, sendable
from reclaim_tui.core.ledger.console.page_sql import page_sql
from reclaim_tui.core.ledger.console.views import View, column_sort
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres.holders import horizon_claim_sql
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA, PG_SCHEMA_VERSION
from reclaim_tui.core.ledger.schema import lease_free_sql
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.row_notes import PENDING_SQL
from reclaim_tui.core.sinks import CallableSink
from tests.helpers.pg_wal import readable_wal_end
from tests.helpers.postgres import PostgresServer, find_bin_dir

pytestmark = pytest.mark.postgres

JOBS = 300
FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"


async def _noop(idem: str, result: StoredResult) -> None:
    return None


def _index_of(conn: psycopg.Connection[Any], columns: str) -> str:
    """The name of the index of jobs on exactly `columns` (whatever it is called)."""
    rows = conn.execute(
        "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        " JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace"
        " WHERE n.nspname = %s AND t.relname = 'jobs' AND pg_get_indexdef(x.indexrelid)"
        " LIKE %s",
        (PG_SCHEMA, f"%USING btree ({columns})%"),
    ).fetchall()
    assert len(rows) == 1, (columns, rows)
    return str(rows[0][0])


def _leaf_inserts(conn: psycopg.Connection[Any], start: str) -> Counter[str]:
    """Btree leaf inserts since `start`, by index name (pg_walinspect)."""
    names = dict(
        conn.execute(
            "SELECT pg_relation_filenode(c.oid)::text, c.relname FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'i'",
            (PG_SCHEMA,),
        ).fetchall()
    )
    found: Counter[str] = Counter()
    for (block_ref,) in conn.execute(
        "SELECT block_ref FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)"
        " WHERE resource_manager = 'Btree' AND record_type IN ('INSERT_LEAF', 'INSERT_POST')",
        (start, readable_wal_end(conn)),
    ):
        node = re.search(r"rel \d+/\d+/(\d+)", block_ref or "")
        if node and node.group(1) in names:
            found[names[node.group(1)]] += 1
    return found


async def _made(dsn: str) -> None:
    """The ledger's schema, made before anything is counted."""
    await (await open_ledger(dsn, clock=ManualClock())).close()


async def _run_jobs(dsn: str, n: int) -> dict[str, Any]:
    clock = ManualClock()
    ledger = await open_ledger(dsn, clock=clock)
    try:
        engine = Engine(
            ledger,
            FakeBackend(clock=clock, latency=0.0),
            CallableSink(_noop),
            owner="bench|1|x",
            config=EngineConfig(batch_size=64, concurrency=16),
        )
        await engine.submit([JobSpec(input=f"job number {i}", model="m") for i in range(n)])
        clock.advance(5)
        report = await engine.tick()
        return dict(report.counts)
    finally:
        await ledger.close()


def test_a_job_writes_no_entry_its_searches_never_read(pg_dsn: str) -> None:
    asyncio.run(_made(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public")
        conn.execute("SET search_path = public")
        handle = _index_of(conn, "handle")
        due = _index_of(conn, "status, next_at")
        (start,) = cast("tuple[str]", conn.execute("SELECT pg_current_wal_lsn()::text").fetchone())
    counts = asyncio.run(_run_jobs(pg_dsn, JOBS))
    assert counts["consumed"] == JOBS
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET search_path = public")
        found = _leaf_inserts(conn, start)
    per_job = {name: found[name] / JOBS for name in (handle, due, "jobs_pkey")}
    # The key's index gets an entry from every version that is not HOT (at
    # least the insert and the three changes of status a job); so did these two.
    assert found["jobs_pkey"] >= 4 * JOBS, per_job
    # Without a handle (the insert): no entry in its index; consumed: none
    # in the due index.
    assert found[handle] <= found["jobs_pkey"] - JOBS, per_job
    assert found[due] <= found["jobs_pkey"] - JOBS, per_job


def _plan(conn: psycopg.Connection[Any], sql: str, args: list[Any]) -> str:
    rows = conn.execute("EXPLAIN " + sql, args).fetchall()
    return "\n".join(str(r[0]) for r in rows)


def test_the_searches_of_each_index_still_seek_on_20000_rows(pg_dsn: str) -> None:
    asyncio.run(_made(pg_dsn))
    statuses = ["reserving", "submitted", "done", "consumed", "failed", "cancelled"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"SET search_path = {PG_SCHEMA}, public")
        conn.execute(
            "INSERT INTO jobs(idem, spec, model, status, handle, created_at, state_since,"
            " updated_at, next_at, held) SELECT 'k' || i, '{}', 'm', (%s::text[])[1 + i %% 6],"
            " CASE WHEN i %% 6 > 0 THEN 'h' || i END, i, i, i, i, (i %% 12 = 5)::int"
            " FROM generate_series(1, 20000) AS i",
            (statuses,),
        )
        conn.execute("ANALYZE jobs")
        free, free_params = lease_free_sql(10.0, [])
        selections = [sendable(10.0, None), pollable(10.0, ())]
        selections.append((f"{PENDING_SQL} AND next_at <= %s", [10.0]))
        selections.append(("status = 'done' AND next_at <= %s", [10.0]))
        selections.append(
            ("inflight = 1 AND status IN ('reserving', 'submitted') AND next_at <= %s", [10.0])
        )
        for where, params in selections:
            sql = horizon_claim_sql(where, free)  # the shared claim, as PgLedger sends it
            plan = _plan(conn, sql, ["me", 99.0, *params, *free_params, 64])
            assert "Index Scan using jobs_due" in plan or "Bitmap Index Scan on jobs_due" in plan, (
                where,
                plan,
            )
            assert "Seq Scan on jobs" not in plan, plan
        plan = _plan(conn, "SELECT idem FROM jobs WHERE handle = %s", ["h7"])
        assert "jobs_handle" in plan and "Seq Scan" not in plan, plan
        sort = column_sort("next", False)
        for status, index in (("submitted", "jobs_due"), ("consumed", "jobs_status_age")):
            view = View(statuses=frozenset({Status(status)}), sort=sort)
            sql, args = page_sql(
                view, 10.0, [], {status: 3334}, None, "after", 50, dialect="postgres"
            )
            plan = _plan(conn, sql, args)
            assert re.search(f"(using|on) {index} ", plan), (status, plan)
            assert "Seq Scan" not in plan, (status, plan)


def _indexes(dsn: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s"
            " AND tablename = 'jobs' ORDER BY 1",
            (PG_SCHEMA,),
        ).fetchall()
    return [(str(name), str(text)) for name, text in rows]


def test_a_ledger_the_previous_code_made_gets_the_new_indexes(
    pg_dsn: str, pg_server: PostgresServer
) -> None:
    (dump,) = FIXTURES.glob("postgres-v5-*.sql")
    old = pg_server.create_database(f"old_v5_{os.getpid()}")
    try:
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), old],
            check=True,
            capture_output=True,
        )
        before = dict(_indexes(old))
        assert "jobs_handle_key" in before and "WHERE" not in before["jobs_due"]

        async def opened(dsn: str) -> list[Any]:
            ledger = await open_ledger(dsn, clock=ManualClock())
            try:
                version = await ledger.schema_version()
                rows = await cast(Any, ledger)._fetchall("SELECT idem FROM jobs ORDER BY idem")
                return [version, [r[0] for r in rows]]
            finally:
                await ledger.close()

        version, keys = asyncio.run(opened(old))
        assert version == PG_SCHEMA_VERSION == 7
        assert keys == ["k-broken", "k-cafe-1", "k-cafe-2", "k-cafe-3", "k-tea"]
        asyncio.run(_made(pg_dsn))
        assert _indexes(old) == _indexes(pg_dsn)
        with psycopg.connect(old) as conn:
            conn.execute(f"SET search_path = {PG_SCHEMA}")
            conn.execute("UPDATE jobs SET handle = 'h-1' WHERE idem = 'k-tea'")
            with pytest.raises(psycopg.errors.UniqueViolation):
                conn.execute("UPDATE jobs SET handle = 'h-1' WHERE idem = 'k-cafe-1'")
    finally:
        pg_server.drop_database(urlsplit(old).path[1:])
