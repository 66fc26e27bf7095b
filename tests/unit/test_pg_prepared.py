"""The PostgreSQL ledger's hot statements (claims, group commits: the ones
sent by PgSession.send) are prepared on the server when the connection is
the server's own session, so each is parsed and planned once per connection
instead of at every claim and group commit; behind a pooler nothing is
prepared (a transaction pooler runs each transaction on any server
connection: `prepared statement "_pg3_0" already exists`, issue 23).

Counted in the ledger's own session (`pg_prepared_statements`, which counts
each statement's plans): one prepared statement per text, run several
times. Through a real PgBouncer, in transaction and in session mode, the
same passes run with preparation off."""

from __future__ import annotations

from typing import Any, cast

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres.holders import LIVE_HOLDERS
from reclaim_tui.core.ledger.postgres.writes import PLAN
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.sinks import CallableSink
from tests.helpers.pgbouncer import PgBouncer

pytestmark = pytest.mark.postgres

JOBS = 40
FLIGHT = 8


async def _nowhere(idem: str, result: object) -> None:
    return None


async def _run_jobs(url: str) -> Any:
    """A ledger at `url` that has sent, polled and delivered JOBS jobs in
    batches of FLIGHT (several claims and group commits of each shape)."""
    clock = ManualClock()
    ledger = await open_ledger(url, clock=clock)
    engine = Engine(
        ledger,
        FakeBackend(clock=clock),
        CallableSink(_nowhere),
        config=EngineConfig(concurrency=FLIGHT),
    )
    specs = [JobSpec(input=f"prepared {i}", model="m") for i in range(JOBS)]
    await engine.submit(specs)
    for _ in range(6):
        clock.advance(60)
        await engine.tick()
    counts = await ledger.counts()
    assert counts.get(Status.CONSUMED.value, (0, None))[0] == JOBS, counts
    return ledger


async def test_the_hot_statements_are_prepared_once_on_a_direct_connection(pg_dsn: str) -> None:
    ledger = await _run_jobs(pg_dsn)
    try:
        conn = cast(Any, ledger)._conn
        cur = await conn.execute(
            "SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements"
        )
        prepared = await cur.fetchall()
    finally:
        await ledger.close()
    texts = [text for text, _ in prepared]
    plan_settings = [runs for text, runs in prepared if text == PLAN]
    assert plan_settings, f"nothing prepared of the group commits: {texts}"
    # One prepared statement per text, each run again and again.
    assert len(texts) == len(set(texts)), texts
    assert plan_settings[0] >= JOBS // FLIGHT, plan_settings
    claims = [runs for text, runs in prepared if "lease_until" in text and "RETURNING" in text]
    assert claims and max(claims) >= JOBS // FLIGHT, prepared
    # psycopg sends %s as $n
    probe = LIVE_HOLDERS.replace("%s", "$1", 1).replace("%s", "$2", 1)
    holders = [runs for text, runs in prepared if text == probe]
    assert holders and holders[0] >= JOBS // FLIGHT, f"the holders probe: {holders}"


async def test_nothing_is_prepared_behind_a_pooler(pg_bouncer: PgBouncer, bouncer_dsn: str) -> None:
    ledger = await _run_jobs(bouncer_dsn)
    try:
        assert cast(Any, ledger)._conn.prepare_threshold is None, pg_bouncer.pool_mode
    finally:
        await ledger.close()
