"""A transaction's pipeline sends nothing after the Sync that ends it
(core/ledger/postgres/pipeline_end.py).

psycopg left pipeline mode with a Sync and then a Flush. Behind PgBouncer in
transaction mode, a Flush that reached the pooler after the Sync's
ReadyForQuery (a client descheduled between the two, on a loaded machine)
took a server connection for this client again and kept it, idle, until
the client's next transaction: with one server connection, another host
then waited until the pooler's query_wait_timeout dropped it ("server
closed the connection unexpectedly" at its pipeline's exit, under CI)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.postgres import pipeline_end
from reclaim_tui.core.ledger.postgres.pipeline import pipelined
from reclaim_tui.core.ledger.postgres.pipeline_end import FITS
from reclaim_tui.core.models import Status, Transition
from reclaim_tui.errors import LedgerConflictError
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer
from tests.helpers.wire_proxy import WireProxy

pytestmark = pytest.mark.postgres

OWNER = "host-a|1|1|boot"


def _after_each_end(trace: list[str]) -> list[list[str]]:
    """From libpq's protocol trace: for each Sync the server answered
    ReadyForQuery 'I' (the transaction over), the messages the client sent
    after it before it began anything else (Parse, Query, Terminate)."""
    sent = [line.split("\t") for line in trace if "\tF\t" in line]
    ends = [line.split("\t")[-1].strip() for line in trace if "\tReadyForQuery\t" in line]
    kinds = [fields[3].split(" ")[0] for fields in sent]
    syncs = [i for i, kind in enumerate(kinds) if kind in ("Sync", "Query")]
    assert len(syncs) == len(ends), (kinds, ends)
    after: list[list[str]] = []
    for at, end in zip(syncs, ends, strict=True):
        if end != "I":
            continue
        tail: list[str] = []
        for kind in kinds[at + 1 :]:
            if kind in ("Parse", "Query", "Terminate"):
                break
            tail.append(kind)
        after.append(tail)
    return after


async def _traced(ledger: Ledger, work: Callable[[], Awaitable[Any]]) -> list[str]:
    conn = cast(Any, ledger).connection
    fd, name = tempfile.mkstemp(prefix="pgtrace-")
    try:
        conn.pgconn.trace(fd)
        try:
            await work()
        finally:
            conn.pgconn.untrace()
        return Path(name).read_text().splitlines()
    finally:
        os.close(fd)
        os.unlink(name)


async def test_nothing_is_sent_after_the_sync_that_ends_a_transaction(pg_dsn: str) -> None:
    """Every kind of transaction the ledger runs (a group commit, a claim, a
    read, one with a read inside, one an error rolls back): the client's
    last message of each is its Sync."""
    ledger = await open_ledger(pg_dsn, clock=ManualClock())
    try:

        async def work() -> None:
            await ledger.insert_jobs([(f"k{i}", "{}", "m") for i in range(6)], "test")
            claimed = await ledger.claim_sendable(OWNER, limit=6, lease_seconds=60)
            keys = sorted(r.idem for r in claimed.rows)
            await ledger.write_batch(OWNER, "engine", sending=keys[:2])
            await ledger.renew(OWNER, keys, 60)
            await ledger.get(keys[0])
            await ledger.counts()
            clash = [
                Transition(k, Status.RESERVING, Status.SUBMITTED, "created", {"handle": "same"})
                for k in keys[3:5]
            ]
            with pytest.raises(LedgerConflictError):
                await ledger.write_batch(OWNER, "engine", transitions=clash)
            await ledger.get(keys[5])

        after = _after_each_end(await _traced(ledger, work))
        assert len(after) >= 8  # every transaction above was seen to end
        assert after == [[]] * len(after)
    finally:
        await ledger.close()


async def test_a_host_done_with_its_transactions_holds_no_pooled_server_connection(
    pg_server: PostgresServer, pg_dsn: str
) -> None:
    """PgBouncer 1.18 in transaction mode with one server connection; host
    A reaches it through a proxy (tests/helpers/wire_proxy.py) that makes
    whatever A sends after a Sync arrive only once the pooler has given the
    server connection back. After A's transactions the server connection is
    free, and host B's claim gets it: it does not wait for the pooler's
    query_wait_timeout (a few seconds here) and fail."""
    bouncer = PgBouncer(pg_server, pool_mode="transaction", pool_size=1, query_wait_timeout=5)
    with started_bouncer(bouncer):
        name = pg_dsn.rsplit("/", 1)[1]

        def active() -> int:
            pools = [p for p in bouncer.show("POOLS") if p["database"] == name]
            return sum(int(cast(int, p["sv_active"]) + cast(int, p["cl_waiting"])) for p in pools)

        async def until(done: Callable[[int], bool]) -> None:
            for _ in range(600):
                if done(await asyncio.to_thread(active)):
                    return
                await asyncio.sleep(0.05)
            raise AssertionError("the pooler did not get there")

        proxy = await WireProxy(
            cast(int, bouncer.port),
            after_end=lambda: until(lambda n: n == 0),  # given back to the pool
            after_late=lambda: until(lambda n: n > 0),  # taken again for the late message
        ).start()
        host_a = await open_ledger(
            f"postgresql://postgres@127.0.0.1:{proxy.port}/{name}?sslmode=disable",
            clock=ManualClock(),
        )
        host_b = await open_ledger(bouncer.via(pg_dsn), clock=ManualClock())
        try:
            await host_a.insert_jobs([(f"k{i}", "{}", "m") for i in range(4)], "test")
            claimed = await host_a.claim_sendable(OWNER, limit=2, lease_seconds=60)
            await host_a.write_batch(OWNER, "engine", sending=[r.idem for r in claimed.rows])
            assert await host_a.get("k0") is not None
            other = await host_b.claim_sendable("host-b|2|2|boot", limit=2, lease_seconds=60)
            assert sorted(r.idem for r in other.rows) == ["k2", "k3"]
            assert await asyncio.to_thread(active) == 0
            assert proxy.late == [[]] * len(proxy.late)
            assert len(proxy.messages[0]) > 20  # A's transactions went through it
        finally:
            await host_a.close()
            await host_b.close()
            await proxy.close()


async def test_an_exit_whose_wait_was_given_up_is_finalized_quietly(pg_dsn: str) -> None:
    """A wait cancelled twice while the pipeline exits (psycopg then closes
    the connection) leaves the exit's generator suspended; the garbage
    collector closes it later, after the connection is gone. It reads and
    sends nothing then (psycopg's own exit flushed the closed connection:
    "connection pointer is NULL", an unraisable exception at collection)."""
    ledger = await open_ledger(pg_dsn, clock=ManualClock())
    conn = cast(Any, ledger).connection
    late: list[BaseException] = []
    with pytest.raises(psycopg.OperationalError):  # the exit itself: the connection is closed
        async with pipelined(conn, []) as pipeline:
            await conn.execute("SELECT 1")
            exiting = pipeline._exit_gen()  # what __aexit__ waits on
            next(exiting)  # its Sync queued; waiting to send
            await conn.close()
            try:
                exiting.close()  # as the garbage collector finalizes it
            except psycopg.Error as exc:
                late.append(exc)
    assert late == []


def test_this_psycopg_has_the_pipeline_steps_the_exit_is_written_on() -> None:
    """The exit without a Flush is made of psycopg's own pipeline steps, which
    are not its public API: a release that moves them turns the ledger back to
    the stock exit (with its Flush). This fails on such a release, before it
    is pinned."""
    assert FITS, f"psycopg {psycopg.__version__}: the pipeline's steps moved"


async def test_a_psycopg_without_those_steps_keeps_its_stock_exit(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the steps are missing, every transaction still runs, on the stock
    pipeline."""
    monkeypatch.setattr(pipeline_end, "FITS", False)
    conn = await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True)
    try:
        async with pipelined(conn, []) as pipeline:
            assert type(pipeline) is psycopg.AsyncPipeline
            cur = await conn.execute("SELECT 41 + 1")
        assert await cur.fetchone() == (42,)
    finally:
        await conn.close()
