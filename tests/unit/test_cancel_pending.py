"""A remote cancel that failed is asked again by the engine's passes until
the API confirms (issue 25, defect 3; core/engine/cancelling.py). Both ledgers."""

from __future__ import annotations

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.errors import PermanentReadError, TransientReadError


def down() -> TransientReadError:
    return TransientReadError("cancel: connection refused", cause="network")


async def test_a_failed_remote_cancel_is_asked_again_with_backoff_until_confirmed(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    spec = JobSpec(input="runs a long time", model="m")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    handle = (await engine.ledger.get(idem)).handle or ""  # type: ignore[union-attr]
    fake.cancel_faults[handle] = [down(), down()]

    row = await engine.operator.cancel(idem, actor=Actor.CLI)
    assert row.status == Status.CANCELLED and row.held
    assert (row.last_error or "").startswith("cancel pending")
    assert fake.remotes[handle].status != "cancelled"

    await engine.tick()  # not due yet: the ledger's back-off
    assert fake.calls["cancel"] == 1
    clock.advance(engine.config.backoff(1))
    report = await engine.tick()
    assert fake.calls["cancel"] == 2 and report.counts["errors"] == 1
    row = await engine.ledger.get(idem)
    assert row is not None and row.held and row.error_streak == 2
    clock.advance(engine.config.backoff(2))
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.CANCELLED
    assert not row.held and row.last_error is None
    assert fake.remotes[handle].status == "cancelled"
    notes = [e.note for e in await engine.ledger.events(idem)]
    assert any("remote cancel confirmed" in n for n in notes), notes
    clock.advance(3600)
    await engine.tick()
    assert fake.calls["cancel"] == 3, "a confirmed cancel is not asked again"


async def test_a_job_that_completed_before_the_retried_cancel_keeps_its_result(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    spec = JobSpec(input="finishes meanwhile", model="m")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    handle = (await engine.ledger.get(idem)).handle or ""  # type: ignore[union-attr]
    fake.cancel_faults[handle] = [down(), PermanentReadError("400 already completed", 400)]
    await engine.operator.cancel(idem, actor=Actor.CLI)
    fake.finish(handle)
    clock.advance(engine.config.backoff(1))
    await engine.tick()  # the cancel is refused: it completed; collected by the next poll
    clock.advance(engine.config.backoff(1))
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.CONSUMED, row
