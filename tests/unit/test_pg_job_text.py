"""The console filter's text on PostgreSQL lives in a table of its own
(`job_text`, core/ledger/postgres/job_text.py), off the transitions' path.

Its trigram indexes sat on `jobs`, and every update that was not HOT (most
transitions: they change the status, the due time or the lease) wrote all
three of them again for text that had not changed: about a third of the
server's CPU per job in benchmarks/ledger_pg_statements.py. These tests pin
the mechanism: no GIN index on `jobs`; the text rows written once at insert
and never by a transition; kept in step with handle, spec and delete; and
the filter's answers the same through either table.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import CallableSink
from tests.helpers.pages import walk

pytestmark = pytest.mark.postgres

NOW = 1_800_000_000.0

# Each job's current text, as the filter tests it: key, input (NULL for a
# spec that is not JSON), handle.
_EXPECTED = """
    SELECT id, 'k'::"char", idem FROM jobs
    UNION ALL SELECT id, 'i', reclaim_input(spec) FROM jobs
        WHERE reclaim_input(spec) IS NOT NULL
    UNION ALL SELECT id, 'h', handle FROM jobs WHERE handle IS NOT NULL
    ORDER BY 1, 2
"""


async def _nowhere(idem: str, result: object) -> None:
    return None


async def _found(db: str, text: str) -> list[str]:
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    try:
        return await walk(reader, View(filter=RowFilter(text=text)), 50)
    finally:
        await reader.close()


async def _run_jobs(dsn: str, n: int) -> None:
    """`n` jobs through every state, as the ledger-alone benchmark drives them."""
    clock = ManualClock(NOW)
    ledger = await open_ledger(dsn, clock=clock)
    try:
        engine = Engine(ledger, FakeBackend(clock=clock, latency=0.0), CallableSink(_nowhere))
        await engine.submit([JobSpec(input=f"prompt number {i}", model="m") for i in range(n)])
        for _ in range(20):
            clock.advance(30)
            await engine.tick()
    finally:
        await ledger.close()


async def test_transitions_never_write_the_text_index(pg_dsn: str) -> None:
    await _run_jobs(pg_dsn, 40)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        statuses = conn.execute("SELECT DISTINCT status FROM jobs").fetchall()
        assert statuses == [("consumed",)]  # every job went through every state
        on_jobs = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'reclaim_tui'"
            " AND tablename = 'jobs' AND indexdef LIKE '%USING gin%'"
        ).fetchall()
        assert on_jobs == []  # a transition's non-HOT update writes no trigram index
        on_text = conn.execute(
            "SELECT tablename, indexname FROM pg_indexes WHERE indexdef LIKE '%gin_trgm_ops%'"
        ).fetchall()
        assert on_text == [("job_text", "job_text_trgm")]
        assert (
            conn.execute(_EXPECTED).fetchall()
            == conn.execute("SELECT job, kind, text FROM job_text ORDER BY 1, 2").fetchall()
        )
        # Written once each: the key's and input's rows by the submit's insert,
        # the handle's by the send; none rewritten by a later transition.
        writers = conn.execute(
            "SELECT kind, count(DISTINCT xmin::text) FROM job_text GROUP BY kind ORDER BY kind"
        ).fetchall()
        sends = conn.execute("SELECT count(DISTINCT xmin::text) FROM job_text WHERE kind = 'h'")
        assert dict(writers)["k"] == dict(writers)["i"] == 1
        assert sends.fetchone() == (dict(writers)["h"],)


async def test_handle_spec_and_delete_stay_in_step(pg_dsn: str) -> None:
    ledger = await open_ledger(pg_dsn, clock=ManualClock(NOW))
    try:
        spec = JobSpec(input="first prompt", model="m").to_json()
        await ledger.insert_jobs([("job-one", spec, "m"), ("job-two", "not json", "m")], "test")
        fetch = cast(Any, ledger)._fetchall
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET handle = 'int-old-handle' WHERE idem = 'job-one'")
        assert await _found(pg_dsn, "int-old") == ["job-one"]
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET handle = 'int-new-handle' WHERE idem = 'job-one'")
            await db.execute(
                "UPDATE jobs SET spec = %s WHERE idem = 'job-one'",
                (JobSpec(input="second prompt", model="m").to_json(),),
            )
        assert await _found(pg_dsn, "int-new") == ["job-one"]
        assert await _found(pg_dsn, "int-old") == []
        assert await _found(pg_dsn, "second") == ["job-one"]
        assert await _found(pg_dsn, "first") == []
        assert await _found(pg_dsn, "job-") == ["job-one", "job-two"]
        assert await fetch(_EXPECTED) == await fetch("SELECT * FROM job_text ORDER BY 1, 2")
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET handle = NULL WHERE idem = 'job-one'")
            await db.execute("DELETE FROM events WHERE idem = 'job-two'")  # as prune does
            await db.execute("DELETE FROM jobs WHERE idem = 'job-two'")
        assert await _found(pg_dsn, "int-new") == []
        assert await _found(pg_dsn, "job-") == ["job-one"]
        assert await fetch(_EXPECTED) == await fetch("SELECT * FROM job_text ORDER BY 1, 2")
    finally:
        await ledger.close()


async def test_a_role_not_granted_the_text_table_still_writes_and_finds(pg_dsn: str) -> None:
    """The manual's DML grant run before the upgrade that added `job_text`:
    the role's inserts and handle changes still keep the text (the triggers
    write as the schema's owner), and its filter reads `jobs` instead."""
    await (await open_ledger(pg_dsn)).close()
    role = "text_app"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT USAGE ON SCHEMA reclaim_tui TO {role}")
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reclaim_tui TO {role}"
        )
        admin.execute(f"GRANT SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA reclaim_tui TO {role}")
        admin.execute(f"REVOKE ALL ON reclaim_tui.job_text FROM {role}")
        app = psycopg.conninfo.make_conninfo(pg_dsn, user=role)
        try:
            ledger = await open_ledger(app, clock=ManualClock(NOW))
            try:
                spec = JobSpec(input="granted before", model="m").to_json()
                await ledger.insert_jobs([("app-job", spec, "m")], "test")
                async with ledger.write() as db:
                    await db.execute("UPDATE jobs SET handle = 'int-app' WHERE idem = 'app-job'")
            finally:
                await ledger.close()
            assert await _found(app, "int-app") == ["app-job"]
            assert await _found(app, "granted") == ["app-job"]
            texts = admin.execute("SELECT kind, text FROM reclaim_tui.job_text ORDER BY kind")
            assert texts.fetchall() == [("h", "int-app"), ("i", "granted before"), ("k", "app-job")]
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


async def test_the_text_triggers_fire_once_an_insert_and_once_a_send(pg_dsn: str) -> None:
    """The insert's trigger is a statement's, reading its transition table
    (one call for a submit's rows); the handle and spec trigger is a row's,
    named by its columns, and fires only where either changed: once a job,
    at its send. A trigger with a transition table on UPDATE cannot name
    columns (PostgreSQL refuses it), so it would capture both versions of
    every row every update writes (each claim, renewal and transition),
    for a text that changes once a job."""
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        name = admin.execute("SELECT current_database()").fetchone()
        assert name is not None
        admin.execute(f"ALTER DATABASE \"{name[0]}\" SET track_functions = 'pl'")
    await _run_jobs(pg_dsn, 40)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        triggers = conn.execute(
            "SELECT tgname, tgtype & 1 = 1, tgtype & 16 = 16, tgnewtable IS NOT NULL,"
            " tgattr <> ''::int2vector FROM pg_trigger"
            " WHERE tgrelid = 'jobs'::regclass AND NOT tgisinternal ORDER BY tgname"
        ).fetchall()
        # (name, for each row, on update, with a transition table, with columns)
        assert triggers == [
            ("job_text_added", False, False, True, False),
            ("job_text_changed", True, True, False, True),
            ("job_text_removed", False, False, False, False),
        ]
        calls: dict[str, int] = {}
        for _ in range(100):  # the ledger's backend reports its counts as it exits
            conn.execute("SELECT pg_stat_clear_snapshot()")
            calls = dict(
                conn.execute(
                    "SELECT funcname, calls FROM pg_stat_user_functions"
                    " WHERE funcname LIKE 'reclaim_text_%'"
                ).fetchall()
            )
            if calls.get("reclaim_text_changed") == 40:
                break
            await asyncio.sleep(0.05)
        assert calls == {"reclaim_text_added": 1, "reclaim_text_changed": 40}
