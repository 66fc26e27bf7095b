"""The PostgreSQL group commit (core/ledger/postgres/writes.py) handles rows
in proportion to its batch, not to the ledger. Its keys joined to `jobs`
(owner and status compared through COALESCE) were planned as a scan of the
whole table, once per statement of every batch; and its events and results,
joined back from the updated rows to the batch by position, were planned as
a nested loop over every pair (the planner saw one updated row). Counted
from EXPLAIN ANALYZE under the transaction's own settings (`writes.PLAN`):
the rows every plan node produced, and the rows a join filter threw away."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres import writes
from reclaim_tui.core.models import JobSpec, Status, Transition
from reclaim_tui.core.sinks import CallableSink

pytestmark = pytest.mark.postgres

JOBS = 2000
BATCH = 64
OWNER = "host|1|test"


def _walk(node: dict[str, Any], key: str) -> int:
    """`key` summed over every node of the plan (rows: over all its loops)."""
    loops = int(node.get("Actual Loops", 1)) if key == "Actual Rows" else 1
    own = int(node.get(key, 0)) * loops
    return own + sum(_walk(child, key) for child in node.get("Plans", []))


async def _nowhere(idem: str, result: object) -> None:
    return None


async def test_a_group_commit_handles_rows_linear_in_its_batch(pg_dsn: str) -> None:
    clock = ManualClock()
    ledger = await open_ledger(pg_dsn, clock=clock)
    try:
        specs = [JobSpec(input=f"job number {i}", model="m") for i in range(JOBS)]
        await Engine(ledger, FakeBackend(clock=clock), CallableSink(_nowhere)).submit(
            specs, send=False
        )
    finally:
        await ledger.close()
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        idems = [r[0] for r in conn.execute("SELECT idem FROM jobs ORDER BY id LIMIT %s", (BATCH,))]
        conn.execute("UPDATE jobs SET lease_owner = %s WHERE idem = ANY(%s)", (OWNER, idems))
        conn.commit()
        transitions = [
            Transition(idem, Status.RESERVING, Status.RESERVING, "noted", release=False)
            for idem in idems
        ]
        groups = writes.shapes(transitions, clock.now())
        assert groups is not None and len(groups) == 1
        ((names, group),) = groups.items()
        base = {"now": clock.now(), "owner": OWNER, "actor": "engine"}
        conn.execute(writes.PLAN)
        explained = conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + writes._apply_sql(names),
            writes._apply_params(names, group, base),
        ).fetchone()
        conn.commit()
        assert explained is not None
        events = conn.execute("SELECT count(*) FROM events WHERE note = 'noted'").fetchone()
    plan = explained[0]
    tree = (plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"]
    assert events == (BATCH,)  # the statement explained is the group commit, run
    handled = _walk(tree, "Actual Rows")
    thrown = _walk(tree, "Rows Removed by Join Filter") + _walk(tree, "Rows Removed by Filter")
    # The batch, its keys' lookups, the updated rows and their events: a few
    # times the batch. A scan of jobs is JOBS rows; every pair, BATCH².
    assert handled <= 10 * BATCH, f"the group commit's plan handled {handled} rows"
    assert thrown <= BATCH, f"the group commit's plan threw {thrown} rows away"
