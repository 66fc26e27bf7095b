"""A PostgreSQL claim finds the lease holders provably gone inside its own
transaction: one transaction per claim, where a read of the holders in a
transaction of its own came before each (320 of 813 transactions per
10,000 jobs in benchmarks/ledger_only.py). Counted: the BEGINs the ledger
sends; and the round trips (pipeline syncs): two, the holders' read with
the statements before it and the claim with the COMMIT, where there were
three. And the rule kept (core/ledger/owner.py): a row whose holder is
provably gone is free, one held by a holder that cannot be judged (another
host) is not, until its lease runs out by the clock."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive, this_process
from reclaim_tui.core.models import Actor, JobSpec, Status, Transition
from reclaim_tui.core.sinks import CallableSink

pytestmark = pytest.mark.postgres


async def _nowhere(idem: str, result: object) -> None:
    return None


async def _claimed(ledger: Any, how: str, me: str, keys: list[str]) -> set[str]:
    if how == "claim":
        claim = await ledger.claim_sendable(me, limit=10, lease_seconds=60.0)
    elif how == "claim_among":
        claim = await ledger.claim_sendable(me, limit=10, lease_seconds=60.0, idems=keys)
    elif how == "orphans":
        claim = await ledger.claim_orphans(me, limit=10, lease_seconds=60.0, force=True)
    else:
        # A group commit's write of a row this process holds, kept held.
        touched = Transition(keys[3], Status.RESERVING, Status.RESERVING, "kept", release=False)
        _, _, claim = await ledger.write_and_claim_sendable(
            me,
            Actor.TICK,
            transitions=[touched],
            limit=10,
            lease_seconds=60.0,
            idems=keys if how == "write_and_claim_among" else None,
        )
    return {row.idem for row in claim.rows}


@pytest.mark.parametrize(
    "how", ["claim", "claim_among", "orphans", "write_and_claim", "write_and_claim_among"]
)
async def test_a_claim_judges_the_holders_inside_its_one_transaction(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    clock = ManualClock()
    me = this_process()
    gone = LeaseOwner(me.host, me.pid, "1", me.space)  # this pid, started at another time
    elsewhere = LeaseOwner("another-host", me.pid, me.start, me.space)
    assert holder_alive(str(gone)) is False and holder_alive(str(elsewhere)) is None
    ledger = await open_ledger(pg_dsn, clock=clock)
    try:
        await Engine(ledger, FakeBackend(clock=clock), CallableSink(_nowhere)).submit(
            [JobSpec(input=f"job {i}", model="m") for i in range(4)], send=False
        )
        rows = await ledger._fetchall("SELECT idem FROM jobs ORDER BY idem")  # type: ignore[attr-defined]
        keys = [r[0] for r in rows]
        # Each lease taken by its holder's own claim (which also raises the
        # holder's lease horizon, read by the next claim's probe).
        for key, holder in zip(keys, (gone, elsewhere, None, str(me)), strict=True):
            if holder is not None:
                taken = await ledger.claim_sendable(
                    str(holder), limit=1, lease_seconds=600, idems=[key]
                )
                assert [r.idem for r in taken.rows] == [key]
        async with ledger.write() as db:
            await db.execute("UPDATE jobs SET inflight = %s", (int(how == "orphans"),))
        clock.advance(1)
        begins: list[str] = []
        execute = psycopg.AsyncConnection.execute

        async def counting(conn: Any, query: Any, *args: Any, **kw: Any) -> Any:
            if str(query).startswith("BEGIN"):
                begins.append(str(query))
            return await execute(conn, query, *args, **kw)

        trips: list[str] = []
        sync, leave = psycopg.AsyncPipeline.sync, psycopg.AsyncPipeline.__aexit__

        async def syncing(pipeline: Any) -> None:
            trips.append("sync")
            await sync(pipeline)

        async def leaving(pipeline: Any, *exc: Any) -> None:
            trips.append("exit")
            await leave(pipeline, *exc)

        monkeypatch.setattr(psycopg.AsyncConnection, "execute", counting)
        monkeypatch.setattr(psycopg.AsyncPipeline, "sync", syncing)
        monkeypatch.setattr(psycopg.AsyncPipeline, "__aexit__", leaving)
        claimed = await _claimed(ledger, how, str(me), keys)
        monkeypatch.undo()
    finally:
        await ledger.close()
    # The gone holder's row and the free one; not the other host's, not
    # the one this process holds itself (a claim takes rows nobody holds).
    assert claimed == {keys[0], keys[2]}, how
    assert len(begins) == 1, f"{how}: {len(begins)} transactions for one claim"
    # The holders read with what came before them; the claim with the COMMIT.
    assert trips == ["sync", "exit"], f"{how}: round trips {trips}"
