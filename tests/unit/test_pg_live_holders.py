"""Other processes' live leases on PostgreSQL (`dead_holders`, asked at
every claim) are found by a probe per owner (core/ledger/postgres/holders.py),
not by reading every leased row: a large submit leased by the asking process
made each claim read all of its reserved rows again. Counted from EXPLAIN
ANALYZE of the statement `dead_holders` runs: the rows every plan node
produced or filtered out. And the same owners as the shared statement, case by case."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.dialect import POSTGRES, text_for
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec

pytestmark = pytest.mark.postgres

NOW = 1_800_000_000.0
ME = "host-a|100|me"
JOBS = 2000

# The shared statement (core/ledger/base.py), the rule the probe keeps.
_SHARED = (
    "SELECT DISTINCT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
    " AND lease_until > %s AND lease_owner != %s"
)

# (owner, lease_until) of the rows after the first JOBS, which are ME's, live.
_OTHERS = [
    ("host-b|1|live", NOW + 60),
    ("host-c|2|expired", NOW - 1),
    ("host-d|3|one-of-two", NOW - 5),
    ("host-d|3|one-of-two", NOW + 5),
    ("host-0|4|before-me", NOW + 1),
    ("host-z|5|after-me", NOW + 1),
    ("host-e|6|ends-now", NOW),
]


def _rows_handled(node: dict[str, Any]) -> int:
    """Rows every plan node produced or read and threw away, over its loops."""
    kept_or_not = sum(int(node.get(k, 0)) for k in ("Actual Rows", "Rows Removed by Filter"))
    own = kept_or_not * int(node.get("Actual Loops", 1))
    return own + sum(_rows_handled(child) for child in node.get("Plans", []))


async def test_live_holders_are_probed_per_owner_with_the_shared_answer(pg_dsn: str) -> None:
    ledger = await open_ledger(pg_dsn, clock=ManualClock(NOW))
    ran: list[tuple[str, Sequence[Any]]] = []
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        keys = [f"key-{i:05}" for i in range(JOBS + len(_OTHERS))]
        await ledger.insert_jobs([(key, spec, "m") for key in keys], "test")
        async with ledger.write() as db:
            await db.execute(
                "UPDATE jobs SET lease_owner = %s, lease_until = %s WHERE id <= %s",
                (ME, NOW + 30, JOBS),
            )
            for n, (owner, until) in enumerate(_OTHERS):
                await db.execute(
                    "UPDATE jobs SET lease_owner = %s, lease_until = %s WHERE id = %s",
                    (owner, until, JOBS + 1 + n),
                )
        fetch = cast(Any, ledger)._fetchall

        async def recording(sql: str, params: Sequence[Any] = ()) -> list[Any]:
            ran.append((sql, params))
            return cast(list[Any], await fetch(sql, params))

        cast(Any, ledger)._fetchall = recording
        assert await ledger.dead_holders(ME) == []  # no owner here is provably gone
    finally:
        await ledger.close()
    ((statement, params),) = ran
    sql = text_for(statement, POSTGRES)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        found = {r[0] for r in conn.execute(sql, params).fetchall()}
        want = {r[0] for r in conn.execute(_SHARED, (NOW, ME)).fetchall()}
        assert found == want == {"host-b|1|live", "host-d|3|one-of-two", "host-0|4|before-me",
                                 "host-z|5|after-me"}  # fmt: skip
        for other in ("host-b|1|live", "nobody"):  # asked by another process
            shared = {r[0] for r in conn.execute(_SHARED, (NOW, other)).fetchall()}
            swapped = [other if p == ME else p for p in params]
            assert {r[0] for r in conn.execute(sql, swapped).fetchall()} == shared
        plans = []
        for _ in ("a table without statistics", "analyzed"):
            (plan,) = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()  # type: ignore[misc]
            plans.append(plan if isinstance(plan, list) else json.loads(plan))
            conn.execute("ANALYZE jobs")
    handled = [_rows_handled(plan[0]["Plan"]) for plan in plans]
    # A probe or two per distinct owner (7 of them) and a live lease each:
    # tens of rows. Reading every leased row is more than JOBS.
    assert max(handled) <= 100, f"finding the live holders handled {handled} rows"
