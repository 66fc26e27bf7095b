"""A failed pass gives back the leases of what it claimed and did not finish
(issue 33, 9): after a grant was revoked, a live console held 52 `submitted`
rows (never polled again, 98 s overdue) for its whole lease while its bar
said the API was fine. The circuit breaker already freed rows it never
started; a pass the ledger failed now frees what it did not finish, and a
release the ledger refused too is made before the next pass."""

from __future__ import annotations

from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.errors import LedgerPermissionError, LedgerUnavailableError


async def _submitted(engine: Engine, fake: FakeBackend, n: int) -> list[str]:
    fake.latency = None  # they stay in progress
    report = await engine.tick([JobSpec(input=f"lease {i}", model="m") for i in range(n)])
    assert report.counts["sent"] == n
    rows = await engine.ledger.select("SELECT idem FROM jobs WHERE status = 'submitted'")
    return [r[0] for r in rows]


def _refuse_writes(engine: Engine, monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    async def refused(*args: Any, **kw: Any) -> Any:
        raise exc

    # Every way a pass writes its outcomes: a group commit, alone or with
    # the send pass's next claim, and the reclaim pass's with its next claim.
    monkeypatch.setattr(engine.ledger, "write_batch", refused)
    monkeypatch.setattr(engine.ledger, "write_and_claim_sendable", refused)
    monkeypatch.setattr(engine.ledger, "apply_and_claim_pollable", refused)


async def _owners(engine: Engine, idems: list[str]) -> set[str | None]:
    rows = [await engine.ledger.get(i) for i in idems]
    assert all(r is not None and r.status == Status.SUBMITTED for r in rows)
    return {r.lease_owner for r in rows if r is not None}


async def test_a_pass_whose_writes_are_refused_frees_the_rows_it_polled(
    engine: Engine, fake: FakeBackend, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    idems = await _submitted(engine, fake, 4)
    clock.advance(3)  # the first polls are due
    _refuse_writes(engine, monkeypatch, LedgerPermissionError("permission denied for events"))
    with pytest.raises(LedgerPermissionError):
        await engine.tick()
    assert fake.calls["get"] >= 4  # polled, and the answers could not be written
    assert await _owners(engine, idems) == {None}


async def test_a_release_the_ledger_refused_too_is_made_before_the_next_pass(
    engine: Engine, fake: FakeBackend, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    idems = await _submitted(engine, fake, 3)
    clock.advance(3)
    _refuse_writes(engine, monkeypatch, LedgerUnavailableError("the server went away"))

    async def away(*args: Any, **kw: Any) -> int:
        raise LedgerUnavailableError("the server went away")

    monkeypatch.setattr(engine.ledger, "release", away)
    with pytest.raises(LedgerUnavailableError):
        await engine.tick()
    assert await _owners(engine, idems) == {engine.owner}
    assert engine.parts.stranded == set(idems)
    monkeypatch.undo()  # the server is back
    await engine.tick()
    assert await _owners(engine, idems) == {None}
    assert engine.parts.stranded == set()
