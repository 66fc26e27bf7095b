"""A claim of named jobs on PostgreSQL (the send pass right after a submit
claims the keys it just reserved) handles rows in proportion to the jobs, not
to their square. Written as `idem IN (SELECT value FROM
json_array_elements_text(…))`, the planner joined the key list anew for every
candidate row (a nested loop over a fresh table whose size it does not know
yet): 2,000 keys cost the server two million comparisons, most of a job's
server CPU in benchmarks/ledger_only.py (benchmarks/ledger_pg_statements.py
shows it). Counted from EXPLAIN ANALYZE: rows every plan node produced."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.claim_writes import claim_statement, sendable
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import CallableSink

pytestmark = pytest.mark.postgres

JOBS = 2000


def _rows_handled(node: dict[str, Any]) -> int:
    """Rows every node of the plan produced, over all its loops."""
    own = int(node.get("Actual Rows", 0)) * int(node.get("Actual Loops", 1))
    return own + sum(_rows_handled(child) for child in node.get("Plans", []))


async def _nowhere(idem: str, result: object) -> None:
    return None


async def test_a_claim_of_named_jobs_handles_rows_linear_in_the_jobs(pg_dsn: str) -> None:
    clock = ManualClock()
    ledger = await open_ledger(pg_dsn, clock=clock)
    try:
        specs = [JobSpec(input=f"job number {i}", model="m") for i in range(JOBS)]
        await Engine(ledger, FakeBackend(clock=clock), CallableSink(_nowhere)).submit(
            specs, send=False
        )
        idems = [row[0] for row in await cast(Any, ledger)._fetchall("SELECT idem FROM jobs")]
        assert len(idems) == JOBS
        where, params = sendable(clock.now() + 5, idems)
        sql, args = await claim_statement(ledger, "bench|1|x", where, params, 64, 60.0)
        async with ledger.write() as db:
            async with db.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, args) as cur:
                (plan,) = (await cur.fetchall())[0]
        leased = await cast(Any, ledger)._fetchall(
            "SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL"
        )
    finally:
        await ledger.close()
    tree = (plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]
    assert leased[0][0] == 64  # the statement explained is the claim, run
    handled = _rows_handled(tree)
    # The candidates, the keys, the 64 claimed and their lookups: a few
    # times the jobs. Joined anew per candidate it is about JOBS² / 2.
    assert handled <= 10 * JOBS, f"the claim's plan handled {handled} rows for {JOBS} jobs"
