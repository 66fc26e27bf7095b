"""The PostgreSQL group commit (core/ledger/postgres/writes.py) takes its
transitions' rows in one order, the key's, whatever order its transitions
come in: two group commits over the same rows, their transitions given in
opposite orders, both apply, one after the other, where taking the rows in
their own orders would deadlock. On a small ledger and on a larger one (the
planner's choices differ with the table's size).
"""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA
from reclaim_tui.core.models import Status, Transition

pytestmark = pytest.mark.postgres

OWNER = "host-a|1|1|boot"
N = 40


async def _claimed(ledger: Ledger, n: int, among: int = 0) -> list[str]:
    """`n` rows leased to OWNER, `among` others (the ledger's size decides
    which side of the apply's join the planner reads first)."""
    jobs = [(f"k{i:05d}", f'{{"input": "job {i}"}}', "m") for i in range(n + among)]
    await ledger.insert_jobs(jobs, "test")
    claim = await ledger.claim_sendable(
        OWNER, limit=n, lease_seconds=600, idems=[k for k, _, _ in jobs[:n]]
    )
    return sorted(r.idem for r in claim.rows)


@pytest.mark.parametrize("among", [0, 3000])
async def test_group_commits_in_opposite_orders_wait_rather_than_deadlock(
    pg_dsn: str, among: int
) -> None:
    """Both take the rows in key order: the one that gets the first row
    takes them all, the other waits for its commit. A third transaction holds
    the middle row until both are under way: in their own orders each would
    hold half the rows and wait for the middle one, then for the other's half."""
    ledgers = [await open_ledger(pg_dsn, clock=ManualClock()) for _ in range(2)]
    try:
        keys = await _claimed(ledgers[0], N, among)
        forward = [Transition(k, Status.RESERVING, Status.RESERVING, "a", {}, release=False)
                   for k in keys]  # fmt: skip
        backward = [Transition(k, Status.RESERVING, Status.RESERVING, "b", {}, release=False)
                    for k in reversed(keys)]  # fmt: skip
        holder = await psycopg.AsyncConnection.connect(pg_dsn)
        try:
            await holder.execute(f"SET search_path = {PG_SCHEMA}")
            await holder.execute("SELECT 1 FROM jobs WHERE idem = %s FOR UPDATE", (keys[N // 2],))
            first = asyncio.ensure_future(ledgers[0].apply(OWNER, "engine", forward))
            second = asyncio.ensure_future(ledgers[1].apply(OWNER, "engine", backward))
            waiting = 0
            for _ in range(500):  # both blocked on a lock: then let the row go
                row = await (
                    await holder.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        " AND datname = current_database()"
                    )
                ).fetchone()
                waiting = int(row[0]) if row else 0
                if waiting >= 2:
                    break
                await asyncio.sleep(0.01)
            assert waiting >= 2
            await holder.rollback()
            results = await asyncio.gather(first, second)
        finally:
            await holder.close()
        assert [sorted(r) for r in results] == [keys, keys]
    finally:
        for ledger in ledgers:
            await ledger.close()
