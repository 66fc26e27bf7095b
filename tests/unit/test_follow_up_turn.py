"""Issue 22.2 on the fake backend: a follow-up turn (`answer`) whose outcome
is unknown is an orphan of its turn — adopted from the event naming its
attempt, or, with no event past the grace, given back to the operator as
a possible duplicate; never a second create while it is unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import MaybeCreatedError, OperatorError


async def _asking(
    tmp_path: Path, db_url: str
) -> tuple[ManualClock, Ledger, FakeBackend, Engine, str]:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    config = EngineConfig(webhooks=True, webhook_grace=300.0, first_poll=1.0)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config, owner="t|1|x")
    job = JobSpec(input="plan it", model="m")
    idem = idempotency_key(job)
    await engine.tick([job])
    fake.fail(fake.handle_for(idem), status="requires_action", error="")
    clock.advance(2)
    await engine.tick()
    row = await ledger.get(idem)
    assert row is not None and row.held and row.status == Status.SUBMITTED
    return clock, ledger, fake, engine, idem


async def _lost_answer(engine: Engine, fake: FakeBackend, idem: str) -> str:
    fake.create_faults = [(MaybeCreatedError("reset after send"), True)]
    with pytest.raises(OperatorError, match="outcome is unknown"):
        await engine.operator.answer(idem, "go on", actor=Actor.CLI)
    with pytest.raises(OperatorError, match="outcome is unknown"):
        await engine.operator.answer(idem, "go on", actor=Actor.CLI)
    assert fake.calls["create"] == 2  # the first turn and the lost follow-up only
    return list(fake.remotes)[-1]


async def test_the_follow_up_is_adopted_from_its_own_event(tmp_path: Path, db_url: str) -> None:
    clock, ledger, fake, engine, idem = await _asking(tmp_path, db_url)
    try:
        follow_up = await _lost_answer(engine, fake, idem)
        clock.advance(5)
        await engine.tick()  # no event yet: nothing changes, nothing is sent
        row = await ledger.get(idem)
        assert row is not None and row.inflight and fake.calls["create"] == 2
        fake.finish(follow_up)
        attempt = fake.remotes[follow_up].attempt
        event = inbox.InboxEvent(
            "msg_f", clock.now(), "interaction.completed", follow_up, idem, "completed", "hmac",
            attempt,
        )  # fmt: skip
        await inbox.record(ledger, event)
        await engine.tick()
        row = await ledger.get(idem)
        assert row is not None and (row.status, row.handle) == (Status.CONSUMED, follow_up)
        assert fake.calls["create"] == 2 and row.duplicates == 0
    finally:
        await ledger.close()


async def test_without_an_event_the_turn_is_given_back_as_a_possible_duplicate(
    tmp_path: Path, db_url: str
) -> None:
    clock, ledger, fake, engine, idem = await _asking(tmp_path, db_url)
    try:
        await _lost_answer(engine, fake, idem)
        clock.advance(301)
        await engine.tick()
        row = await ledger.get(idem)
        assert row is not None and row.held and not row.inflight and row.duplicates == 1
        answered = await engine.operator.answer(idem, "go on", actor=Actor.CLI)
        assert answered.handle == list(fake.remotes)[-1] and fake.calls["create"] == 3
    finally:
        await ledger.close()


async def test_cancel_finds_and_cancels_the_unknown_follow_up(tmp_path: Path, db_url: str) -> None:
    _, ledger, fake, engine, idem = await _asking(tmp_path, db_url)
    try:
        fake.supports_lookup = True
        follow_up = await _lost_answer(engine, fake, idem)
        row = await engine.operator.cancel(idem, actor=Actor.CLI)
        assert row.status == Status.CANCELLED
        assert fake.remotes[follow_up].status == "cancelled"
    finally:
        await ledger.close()
