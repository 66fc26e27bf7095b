"""What only the PostgreSQL ledger has: the server's clock, claims by several
hosts at once, a restart under a live connection, and
refusals (a foreign schema, a newer one, synchronous_commit off)."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres.clock import ServerClock
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA, PG_SCHEMA_VERSION
from reclaim_tui.errors import (
    LedgerError,
    LedgerForeignError,
    LedgerUnavailableError,
    LedgerVersionError,
)
from tests.helpers.postgres import PostgresServer, started

pytestmark = pytest.mark.postgres


async def test_sqlite_text_reaching_the_server_is_refused_not_rewritten(pg_dsn: str) -> None:
    """Nothing rewrites SQL for PostgreSQL: a statement written in SQLite's
    words alone fails loudly at the server instead of meaning something else
    there, in a read and in a write, and an `Sql` part spliced into an
    f-string fails before it is sent."""
    ledger = await open_ledger(pg_dsn)
    try:
        with pytest.raises(LedgerError, match="placeholder"):
            await ledger.select("SELECT idem FROM jobs WHERE idem = ?", ["k"])
        with pytest.raises(LedgerError, match="syntax error"):
            await ledger.select("SELECT idem FROM jobs INDEXED BY jobs_updated")
        with pytest.raises(LedgerError, match="operator does not exist"):
            async with ledger.write() as db:
                await db.execute(Sql(lambda d: f"DELETE FROM jobs WHERE idem = {d.p}"), ["k"])
                await db.execute(
                    "DELETE FROM jobs WHERE idem IN (SELECT value FROM json_each('[]'))"
                )
        with pytest.raises(TypeError, match="f-string"):
            await ledger.select(f"SELECT idem FROM jobs WHERE {Sql(lambda d: d.p)}", ["k"])
        assert await ledger.select(Sql(lambda d: f"SELECT {d.p}::text"), ["ok"]) == [("ok",)]
    finally:
        await ledger.close()


async def test_server_clock_ignores_the_hosts_wall_clock(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose clock is an hour fast writes the server's time all the same."""
    honest = await open_ledger(pg_dsn)
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + 3600.0)
    skewed = await open_ledger(pg_dsn)
    try:
        assert isinstance(skewed.clock, ServerClock)
        async with await psycopg.AsyncConnection.connect(pg_dsn) as conn:
            cur = await conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
            row = await cur.fetchone()
        assert row is not None
        assert abs(skewed.clock.now() - row[0]) < 5.0
        assert abs(skewed.clock.now() - honest.clock.now()) < 5.0
    finally:
        await honest.close()
        await skewed.close()


def test_server_clock_counts_on_the_monotonic_clock_between_readings() -> None:
    ticks = [100.0]
    clock = ServerClock(monotonic=lambda: ticks[0])
    clock._server, clock._at = 1_800_000_000.0, 100.0  # as a sync would leave it
    ticks[0] = 112.5
    assert clock.now() == 1_800_000_012.5
    assert not clock.stale
    ticks[0] = 100.0 + 31
    assert clock.stale  # the next statement reads the server's clock again


async def test_hosts_claiming_at_once_never_share_a_row(pg_dsn: str) -> None:
    clock = ManualClock()
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(4)]
    try:
        await ledgers[0].insert_jobs([(f"k{i:04d}", "{}", "m") for i in range(400)], "cli")
        claims = await asyncio.gather(
            *(
                led.claim_sendable(f"host-{n}|1|1|", limit=150, lease_seconds=30)
                for n, led in enumerate(ledgers)
            )
        )
        taken = [r.idem for c in claims for r in c.rows]
        assert len(taken) == len(set(taken)) == 400
        # A host whose lease is live cannot be overtaken, one whose lease ran out can.
        again = await ledgers[1].claim_sendable("host-9|1|1|", limit=500, lease_seconds=30)
        assert again.rows == []
        clock.advance(31)
        again = await ledgers[1].claim_sendable("host-9|1|1|", limit=500, lease_seconds=30)
        assert len(again.rows) == 400
    finally:
        for led in ledgers:
            await led.close()


async def test_inserting_the_same_keys_from_two_hosts_at_once(pg_dsn: str) -> None:
    a, b = await open_ledger(pg_dsn), await open_ledger(pg_dsn)
    try:
        jobs = [(f"k{i}", "{}", "m") for i in range(2000)]
        (ins_a, old_a), (ins_b, old_b) = await asyncio.gather(
            a.insert_jobs(jobs, "cli"), b.insert_jobs(jobs[::-1], "cli")
        )
        assert sorted(ins_a + ins_b) == sorted(j[0] for j in jobs)
        assert len(old_a) + len(old_b) == 2000
        assert sum(1 for _ in await a.select("SELECT id FROM events")) == 2000
    finally:
        await a.close()
        await b.close()


async def test_a_server_restart_fails_one_call_then_the_ledger_reconnects() -> None:
    with started(PostgresServer()) as server:
        dsn = server.create_database("restart")
        ledger = await open_ledger(dsn)
        try:
            await ledger.insert_jobs([("before", "{}", "m")], "cli")
            await asyncio.to_thread(server.restart_immediate)
            with pytest.raises(LedgerUnavailableError, match="cannot be used now"):
                await ledger.get("before")
            row = await ledger.get("before")  # dialled again
            assert row is not None
            inserted, _ = await ledger.insert_jobs([("after", "{}", "m")], "cli")
            assert inserted == ["after"]
            await asyncio.to_thread(server.stop)
            with pytest.raises(LedgerUnavailableError):
                await ledger.insert_jobs([("while-down", "{}", "m")], "cli")
        finally:
            await ledger.close()


async def test_refusals(pg_dsn: str) -> None:
    with pytest.raises(LedgerError, match="no ledger here"):
        await open_ledger(pg_dsn, readonly=True, create=False)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {PG_SCHEMA}")
        await conn.execute(f"CREATE TABLE {PG_SCHEMA}.other (x int)")
    with pytest.raises(LedgerForeignError, match="not a reclaim-tui"):
        await open_ledger(pg_dsn)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"DROP SCHEMA {PG_SCHEMA} CASCADE")
    led = await open_ledger(pg_dsn)
    await led.close()
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"UPDATE {PG_SCHEMA}.meta SET value = %s", (str(PG_SCHEMA_VERSION + 1),))
    with pytest.raises(LedgerVersionError, match="newer reclaim-tui"):
        await open_ledger(pg_dsn)
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"UPDATE {PG_SCHEMA}.meta SET value = %s", (str(PG_SCHEMA_VERSION),))
        db = pg_dsn.rsplit("/", 1)[1]
        await conn.execute(f"ALTER DATABASE {db} SET synchronous_commit = off")
    with pytest.raises(LedgerError, match="synchronous_commit is off"):
        await open_ledger(pg_dsn)


async def test_many_processes_opening_a_new_database_at_once_migrate_it_once(
    pg_dsn: str,
) -> None:
    opened = await asyncio.gather(*(open_ledger(pg_dsn) for _ in range(6)))
    try:
        assert {await led.schema_version() for led in opened} == {PG_SCHEMA_VERSION}
    finally:
        for led in opened:
            await led.close()


async def test_the_filter_folds_ascii_case_only_whatever_the_database_locale(
    pg_server: PostgresServer,
) -> None:
    """A database created with a UTF-8 locale (most are) folded É to é in the
    input filter's ILIKE, where SQLite's LIKE — the filter's documented rule
    — folds ASCII only (found by the review of the contract suite)."""
    from reclaim_tui.core.ledger.console.queries import ConsoleReader
    from reclaim_tui.core.ledger.console.views import RowFilter, View
    from reclaim_tui.core.models import JobSpec

    base = pg_server.create_database()
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(
            "CREATE DATABASE utf8_locale TEMPLATE template0 ENCODING 'UTF8'"
            " LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"
        )
    dsn = base.rsplit("/", 1)[0] + "/utf8_locale"
    try:
        clock = ManualClock()
        ledger = await open_ledger(dsn, clock=clock)
        specs = {"a1": "Summarise the café menu", "b2": "CAFÉ in capitals", "c3": "Error: x"}
        await ledger.insert_jobs(
            [(k, JobSpec(input=v, model="m").to_json(), "m") for k, v in specs.items()], "t"
        )
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET last_error = 'Ünknown ÉRROR' WHERE idem = 'c3'")
        await ledger.close()
        reader = await ConsoleReader.open(dsn, clock=clock)
        try:
            for text, want in (("CAFÉ", ["b2"]), ("café", ["a1"]), ("caf", ["a1", "b2"])):
                page = await reader.page(View(filter=RowFilter(text=text)))
                assert sorted(r.idem for r in page.rows) == want, text
            page = await reader.page(View(filter=RowFilter.parse("error:érror")))
            assert page.rows == []
            page = await reader.page(View(filter=RowFilter.parse("error:ÉRROR")))
            assert [r.idem for r in page.rows] == ["c3"]
        finally:
            await reader.close()
    finally:
        pg_server.drop_database("utf8_locale")


async def test_the_input_filter_survives_a_parallel_plan(pg_dsn: str) -> None:
    """reclaim_input's EXCEPTION block is a subtransaction, which a parallel
    worker cannot start: declared PARALLEL SAFE, a parallel scan of the input
    filter failed at 1M rows. Forced parallel here, on a few rows."""
    ledger = await open_ledger(pg_dsn)
    try:
        await ledger.insert_jobs(
            [("good", '{"input": "find me"}', "m"), ("bad", "not json at all", "m")], "t"
        )
    finally:
        await ledger.close()
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        cur = await conn.execute("SHOW server_version_num")
        row = await cur.fetchone()
        assert row is not None
        knob = "debug_parallel_query" if int(row[0]) >= 160000 else "force_parallel_mode"
        await conn.execute(f"SET {knob} = on")
        await conn.execute(f"SET search_path TO {PG_SCHEMA}, public")
        cur = await conn.execute(
            "SELECT idem FROM jobs WHERE reclaim_input(spec) ILIKE '%find%' ORDER BY idem"
        )
        assert await cur.fetchall() == [("good",)]


async def test_console_reads_are_planned_with_their_parameters(pg_dsn: str) -> None:
    """psycopg prepares a statement after 5 runs and PostgreSQL may then use a
    generic plan blind to the filter text: at 1M rows it walked a status index
    (6-10 s) instead of the trigram indexes (12-23 ms). Read-only ledgers (the
    console's) plan every read with its parameters."""
    await (await open_ledger(pg_dsn)).close()
    reader = await open_ledger(pg_dsn, readonly=True, create=False)
    writer = await open_ledger(pg_dsn)
    try:
        assert (await reader.select("SHOW plan_cache_mode"))[0][0] == "force_custom_plan"
        assert (await writer.select("SHOW plan_cache_mode"))[0][0] == "auto"
    finally:
        await reader.close()
        await writer.close()


async def _until_the_server_runs(dsn: str, query: str) -> None:
    """Until another session of the server runs a statement LIKE `query`."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as watcher:
        async with asyncio.timeout(30):
            while True:
                cur = await watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE %s",
                    [query],
                )
                if (await cur.fetchone()) != (0,):
                    return
                await asyncio.sleep(0.01)


async def test_a_cancelled_read_keeps_its_connection(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The console cancels a page read it replaced. psycopg, cancelled in the
    middle of a query, closed the connection ("query cancellation interrupted:
    closing connection" on stderr, 7-17 times a run at 1M rows): now the
    server is asked to stop the query and the connection stays."""
    await (await open_ledger(pg_dsn)).close()
    reader = await open_ledger(pg_dsn, readonly=True, create=False)
    try:
        conn = reader.connection
        slow = asyncio.ensure_future(reader.select("SELECT pg_sleep(30)"))
        await _until_the_server_runs(pg_dsn, "%pg_sleep(30)%")
        slow.cancel()
        await asyncio.sleep(0)  # the first cancellation lands: psycopg starts cleaning up
        slow.cancel()  # Textual cancels a worker again while it still cleans up
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert (await reader.select("SELECT 1")) == [(1,)]
        assert reader.connection is conn and not conn.closed
        assert "closing connection" not in caplog.text
    finally:
        await reader.close()


async def test_claims_run_read_committed_whatever_the_database_default(pg_dsn: str) -> None:
    """An administrator may make SERIALIZABLE the database's default. The
    claims' SKIP LOCKED and compare-and-set are written for READ COMMITTED
    (a row another host moved is skipped, not a serialization failure): the
    ledger's transactions say their level themselves."""
    db = pg_dsn.rsplit("/", 1)[1]
    async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
        await conn.execute(f"ALTER DATABASE {db} SET default_transaction_isolation = serializable")
    clock = ManualClock()
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(4)]
    try:
        async with ledgers[0].write() as session:
            cur = await session.execute("SHOW transaction_isolation")
            assert (await cur.fetchone())[0] == "read committed"
        await ledgers[0].insert_jobs([(f"k{i:04d}", "{}", "m") for i in range(400)], "cli")
        for _ in range(5):
            claims = await asyncio.gather(
                *(
                    led.claim_sendable(f"host-{n}|1|1|", limit=50, lease_seconds=30)
                    for n, led in enumerate(ledgers)
                )
            )
            taken = [r.idem for c in claims for r in c.rows]
            assert len(taken) == len(set(taken)) == 200
            clock.advance(31)  # every lease runs out: the next round takes them again
    finally:
        for led in ledgers:
            await led.close()
