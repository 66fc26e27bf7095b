"""The PostgreSQL group commit (core/ledger/postgres/writes.py) locks its
transitions' rows by updating them, in key order, with one statement.

Counted, not timed: the statements a group commit sends (a transaction
setting, then one apply for every shape of columns its transitions write),
and the row locks `FOR UPDATE` it wrote to the WAL (pg_walinspect: each
`SELECT … FOR UPDATE` of a row is a Heap LOCK record, on top of the row's
update). And the order still holds: two group commits over the same rows,
their transitions given in opposite orders, both apply, one after the
other, where locking in their own orders would deadlock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA
from reclaim_tui.core.ledger.postgres.session import PgSession
from reclaim_tui.core.models import Status, Transition
from tests.helpers.pg_wal import readable_wal_end

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


def _transitions(keys: list[str]) -> list[Transition]:
    """Two shapes of columns: half the rows submitted with a handle, half a
    poll that writes its due time only."""
    out = []
    for i, key in enumerate(keys):
        if i % 2:
            out.append(
                Transition(key, Status.RESERVING, Status.SUBMITTED, "created",
                           {"handle": "h-" + key, "inflight": False}, release=False)
            )  # fmt: skip
        else:
            out.append(
                Transition(key, Status.RESERVING, Status.RESERVING, "", {"next_at": 5.0},
                           release=False)
            )  # fmt: skip
    return out


@contextmanager
def _statements_sent() -> Iterator[list[str]]:
    """The statements PgSession.send sends while the block runs."""
    sent: list[str] = []
    original = PgSession.send

    async def counted(self: PgSession, text: str, params: Any) -> Any:
        sent.append(text)
        return await original(self, text, params)

    PgSession.send = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        PgSession.send = original  # type: ignore[method-assign]


def _wal_start(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public")
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    return cast("str", row[0])  # type: ignore[index]


def _row_locks(dsn: str, start: str) -> int:
    """Heap LOCK records of `FOR UPDATE` (KEYS_UPDATED) on `jobs` since `start`."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        (node,) = cast(
            "tuple[int]",
            conn.execute(
                "SELECT pg_relation_filenode(%s::regclass)", (f"{PG_SCHEMA}.jobs",)
            ).fetchone(),
        )
        rows = conn.execute(
            "SELECT count(*) FROM public.pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)"
            " WHERE resource_manager = 'Heap' AND record_type = 'LOCK'"
            " AND description LIKE '%%KEYS_UPDATED%%' AND block_ref LIKE %s",
            (start, readable_wal_end(conn), f"% rel %/%/{node} %"),
        ).fetchone()
    return int(rows[0])  # type: ignore[index]


async def test_a_group_commit_locks_its_rows_by_updating_them(pg_dsn: str) -> None:
    ledger = await open_ledger(pg_dsn, clock=ManualClock())
    try:
        keys = await _claimed(ledger, N)
        transitions = _transitions(keys)
        start = _wal_start(pg_dsn)
        with _statements_sent() as sent:
            _, applied = await ledger.write_batch(OWNER, "engine", transitions=transitions)
        assert sorted(applied) == keys
        locks = _row_locks(pg_dsn, start)
    finally:
        await ledger.close()
    # No row locked before its update: the update's own lock is the only one.
    assert locks == 0, f"{locks} rows locked FOR UPDATE by a group commit of {N}"
    # The transaction's planner settings, then one statement that updates
    # every row (it was: the settings, a lock of every row, one update per shape).
    assert len(sent) == 2, sent


@pytest.mark.parametrize("among", [0, 3000])
async def test_group_commits_in_opposite_orders_wait_rather_than_deadlock(
    pg_dsn: str, among: int
) -> None:
    """Both take the rows in key order: the one that gets the first row
    takes them all, the other waits for its commit. A third transaction holds
    the middle row until both are under way: in their own orders each would
    hold half the rows and wait for the middle one, then for the other's half.
    On a small ledger and on a larger one (the apply's two plans)."""
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
