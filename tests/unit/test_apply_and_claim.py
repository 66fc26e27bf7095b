"""`Ledger.apply_and_claim_pollable` and `write_and_claim_sendable`: a
batch's outcomes and the next claim in ONE transaction, the same on both
engines (`db_url`): the transitions are compare-and-sets as in `apply`,
the claim is `claim_pollable`'s (`claim_sendable`'s), and a write the
ledger refuses takes the claim back with it."""

from __future__ import annotations

import json

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import Actor, Status, Transition
from reclaim_tui.errors import LedgerError

ME, OTHER = "me|1|a", "you|2|b"


async def _submitted(ledger: Ledger, keys: list[str]) -> None:
    """Rows `submitted` with a handle, due for a poll, their leases free."""
    spec = json.dumps({"input": "x", "model": "m"})
    await ledger.insert_jobs([(k, spec, "m") for k in keys], "t")
    claim = await ledger.claim_sendable(ME, limit=len(keys), lease_seconds=30)
    await ledger.write_batch(ME, Actor.TICK, sending=[r.idem for r in claim.rows])
    moved = [
        Transition(
            k, Status.RESERVING, Status.SUBMITTED, "created", {"handle": f"h-{k}", "inflight": 0}
        )
        for k in keys
    ]
    assert sorted(await ledger.apply(ME, Actor.TICK, moved)) == sorted(keys)
    await ledger.release(ME, keys)


def _polled(key: str) -> Transition:
    return Transition(
        key, Status.SUBMITTED, Status.SUBMITTED, "still running", {"polls": 1}, release=False
    )


async def test_outcomes_and_the_next_claim_commit_together(db_url: str, clock: ManualClock) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        await _submitted(ledger, ["a", "b", "c", "d", "e"])
        first = await ledger.claim_pollable(ME, limit=2, lease_seconds=30)
        held = [r.idem for r in first.rows]
        # One of them was taken over meanwhile: its compare-and-set fails.
        await ledger.release(ME, [held[1]])
        assert len((await ledger.claim_pollable(OTHER, limit=1, lease_seconds=30)).rows) == 1
        applied, claim = await ledger.apply_and_claim_pollable(
            ME, Actor.TICK, [_polled(k) for k in held], limit=2, lease_seconds=30, exclude=held
        )
        assert applied == [held[0]]
        taken = [r.idem for r in claim.rows]
        assert len(taken) == 2 and not set(taken) & set(held)
        for key in taken:
            row = await ledger.get(key)
            assert row is not None and row.lease_owner == ME
        # A key given twice (the shared statements' path on PostgreSQL), no claim.
        twice = [_polled(taken[0]), _polled(taken[0])]
        applied, none = await ledger.apply_and_claim_pollable(
            ME, Actor.TICK, twice, limit=0, lease_seconds=30
        )
        assert set(applied) == {taken[0]} and none.rows == []
        row = await ledger.get(taken[0])
        assert row is not None and row.lease_owner == ME
    finally:
        await ledger.close()


async def test_a_refused_write_takes_the_claim_back_with_it(
    db_url: str, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        await _submitted(ledger, ["a", "b", "c"])
        first = await ledger.claim_pollable(ME, limit=1, lease_seconds=30)

        async def refused(*args: object, **kw: object) -> object:
            raise LedgerError("the write was refused")

        if isinstance(ledger, SqliteLedger):
            # the whole transaction is one call to SQLite's thread: refused
            # there, after the claim's statement ran, right before COMMIT
            def refused_now(conn: object) -> None:
                raise LedgerError("the write was refused")

            monkeypatch.setattr(ledger, "_bump_generation_now", refused_now)
        else:
            monkeypatch.setattr(ledger, "_write_in", refused)
        with pytest.raises(LedgerError):
            await ledger.apply_and_claim_pollable(
                ME, Actor.TICK, [_polled(first.rows[0].idem)], limit=5, lease_seconds=30
            )
        monkeypatch.undo()
        owners = {k: (await ledger.get(k)) for k in ("a", "b", "c")}
        claimed = [k for k, r in owners.items() if r is not None and r.lease_owner == ME]
        assert claimed == [first.rows[0].idem]  # nothing more was claimed
    finally:
        await ledger.close()


async def test_a_group_commit_takes_the_next_batch_to_send(db_url: str, clock: ManualClock) -> None:
    ledger = await open_ledger(db_url, clock=clock)
    try:
        spec = json.dumps({"input": "x", "model": "m"})
        await ledger.insert_jobs([(k, spec, "m") for k in ("a", "b", "c", "d")], "t")
        first = await ledger.claim_sendable(ME, limit=2, lease_seconds=30)
        held = [r.idem for r in first.rows]
        marked, applied, claim = await ledger.write_and_claim_sendable(
            ME, Actor.TICK, sending=held, limit=5, lease_seconds=30, idems=["a", "b", "c"]
        )
        assert sorted(marked) == sorted(held) and applied == []
        # The marked rows are in flight now, not sendable; only "c" is in scope.
        assert [r.idem for r in claim.rows] == sorted({"a", "b", "c"} - set(held))
        row = await ledger.get(claim.rows[0].idem)
        assert row is not None and row.lease_owner == ME and row.attempts == 0
    finally:
        await ledger.close()
