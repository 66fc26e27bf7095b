"""Other processes' live leases on PostgreSQL (`dead_holders`, asked at
every claim) are found from the lease horizons (core/ledger/postgres/holders.py),
not by reading leased rows: a large submit leased by the asking process
made each claim read all of its reserved rows again, and `jobs` has no index
on the owner any more.

Every lease here is taken by its holder's own claim (or renewed by its own
renewal), so its horizon is what the product writes. The probe's owners are
every owner of a live lease (the shared statement's answer) and, beside
them, only owners whose horizon is live but whose leases were given back
early: a superset, which frees no more rows (only the rows of a holder
provably gone are freed, and such an owner holds none). Counted from
EXPLAIN ANALYZE of the statement `dead_holders` runs: with hundreds of
owners whose horizons ran out, the probe reads the live ones only."""

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
START = NOW - 1000  # the clock when the leases are taken
ME = "host-a|100|me"
JOBS = 2000
STALE = 300  # owners whose every lease ended long before NOW

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
    ("host-r|7|released", NOW + 60),  # given back below: its horizon stays
    ("host-n|8|renewed", NOW - 10),  # renewed below to NOW + 20
]


def _rows_handled(node: dict[str, Any]) -> int:
    """Rows every plan node produced or read and threw away, over its loops."""
    kept_or_not = sum(int(node.get(k, 0)) for k in ("Actual Rows", "Rows Removed by Filter"))
    own = kept_or_not * int(node.get("Actual Loops", 1))
    return own + sum(_rows_handled(child) for child in node.get("Plans", []))


async def test_live_holders_are_the_live_horizons_a_superset_of_the_shared_answer(
    pg_dsn: str,
) -> None:
    clock = ManualClock(START)
    ledger = await open_ledger(pg_dsn, clock=clock)
    # The first plan below is the one of a table no VACUUM or ANALYZE has
    # seen. The server's autovacuum visits this database whenever the rest
    # of the suite's load lets it, and one visit midway makes that plan
    # another: after a VACUUM without ANALYZE, for one, the planner knows
    # the table's size and nothing of its values, and a sequential scan of
    # its few pages (every horizon, live or not) is then the cheaper plan.
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("ALTER TABLE reclaim_tui.lease_horizons SET (autovacuum_enabled = off)")
    ran: list[tuple[str, Sequence[Any]]] = []
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        keys = [f"key-{i:05}" for i in range(JOBS + len(_OTHERS) + STALE)]
        await ledger.insert_jobs([(key, spec, "m") for key in keys], "test")
        mine = await ledger.claim_sendable(
            ME, limit=JOBS, lease_seconds=NOW + 30 - START, idems=keys[:JOBS]
        )
        assert len(mine.rows) == JOBS
        for n, (owner, until) in enumerate(_OTHERS):
            key = keys[JOBS + n]
            taken = await ledger.claim_sendable(
                owner, limit=1, lease_seconds=until - START, idems=[key]
            )
            assert [r.idem for r in taken.rows] == [key]
        for n in range(STALE):  # each took one row for a second, long ago
            key = keys[JOBS + len(_OTHERS) + n]
            taken = await ledger.claim_sendable(
                f"host-s|{n}|stale", limit=1, lease_seconds=1.0, idems=[key]
            )
            assert [r.idem for r in taken.rows] == [key]
        released, renewed = keys[JOBS + 7], keys[JOBS + 8]
        assert await ledger.release("host-r|7|released", [released]) == 1
        assert await ledger.renew("host-n|8|renewed", [renewed], NOW + 20 - START) == {renewed}
        clock.advance(NOW - START)
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
        assert want == {"host-b|1|live", "host-d|3|one-of-two", "host-0|4|before-me",
                        "host-z|5|after-me", "host-n|8|renewed"}  # fmt: skip
        assert found == want | {"host-r|7|released"}
        for other in ("host-b|1|live", "nobody"):  # asked by another process
            shared = {r[0] for r in conn.execute(_SHARED, (NOW, other)).fetchall()}
            swapped = [other if p == ME else p for p in params]
            got = {r[0] for r in conn.execute(sql, swapped).fetchall()}
            assert got == shared | {"host-r|7|released"}
        plans = []
        for setting in ("a table without statistics", "analyzed", "sequential scans off"):
            if setting == "sequential scans off":  # as in a group commit's transaction
                conn.execute("SET enable_seqscan = off")
            (plan,) = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()  # type: ignore[misc]
            plans.append(plan if isinstance(plan, list) else json.loads(plan))
            conn.execute("ANALYZE lease_horizons")
    handled = [_rows_handled(plan[0]["Plan"]) for plan in plans]
    # The live horizons (8 of them) and ME's: tens of rows. Reading every
    # horizon is more than STALE; reading every leased row more than JOBS.
    assert max(handled) <= 100, f"finding the live holders handled {handled} rows"
    # No plan so dear it is compiled (a transaction with sequential scans off
    # prices a sequential scan of the horizons in the billions).
    assert all("JIT" not in plan[0] for plan in plans), plans
