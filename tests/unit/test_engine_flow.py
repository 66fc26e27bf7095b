"""The engine's happy path and per-row outcomes, on the fake backend and a manual clock."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.errors import InteractionGoneError, MaybeCreatedError, NotCreatedError


def job(text: str, key: str | None = None) -> JobSpec:
    return JobSpec(input=text, model="m", key=key)


async def test_submit_reclaim_consume(
    engine: Engine, fake: FakeBackend, clock: ManualClock, out_dir: Path
) -> None:
    spec = job("hello")
    idem = idempotency_key(spec)
    report = await engine.tick([spec])
    assert report.counts["inserted"] == 1 and report.counts["sent"] == 1
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED and row.handle
    assert row.attempts == 1 and not row.inflight and row.lease_owner is None

    fake.finish(row.handle)
    await engine.tick()  # not due yet: first poll is 2 s after submit
    assert (await engine.ledger.get(idem)).status == Status.SUBMITTED  # type: ignore[union-attr]
    clock.advance(2)
    report = await engine.tick()
    assert report.counts["completed"] == 1 and report.counts["consumed"] == 1
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.CONSUMED
    assert (out_dir / f"{idem}.md").read_text() == fake_output_text("hello")
    assert json.loads((out_dir / f"{idem}.json").read_text())["id"] == row.handle
    stored = await engine.ledger.result(idem)
    assert stored is not None and stored.output_text == fake_output_text("hello")
    notes = [e.to_status for e in await engine.ledger.events(idem)]
    assert notes[0] == "reserving" and notes[-2:] == ["done", "consumed"]


async def test_adaptive_polling_doubles(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    await engine.tick([job("slow")])
    polls_at = []
    for second in range(1, 70):
        clock.advance(1)
        r = await engine.tick()
        if r.counts["polled"]:
            polls_at.append(second)
    assert polls_at == [2, 4, 8, 16, 32, 64]


async def test_not_created_retries_with_backoff_then_fails(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    fake.create_faults = [NotCreatedError("429", 429, retryable=True)] * 5
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.RESERVING and not row.inflight
    assert row.attempts == 1 and row.last_error and "429" in row.last_error
    for _ in range(4):
        clock.advance(400)
        await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.FAILED
    assert "5 attempts" in (row.last_error or "")
    assert fake.calls["create"] == 5


async def test_permanent_create_error_fails_at_once(engine: Engine, fake: FakeBackend) -> None:
    fake.create_faults = [NotCreatedError("bad request", 400, retryable=False)]
    spec = job("x")
    await engine.tick([spec])
    row = await engine.ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.FAILED and row.attempts == 1


async def test_maybe_created_is_adopted_by_label(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    fake.create_faults = [(MaybeCreatedError("503 after accept", 503), True)]
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.RESERVING and row.inflight
    clock.advance(10)
    report = await engine.tick()
    assert report.counts["adopted"] == 1
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED
    assert fake.creates_per_label[idem] == 1 and row.duplicates == 0


async def test_maybe_created_without_lookup_resubmits_and_records_duplicate(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    fake.supports_lookup = False
    fake.create_faults = [(MaybeCreatedError("timeout", None), True)]
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    clock.advance(10)
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED and row.duplicates == 1
    assert fake.creates_per_label[idem] == 2
    assert any("possible duplicate" in e.note for e in await engine.ledger.events(idem))


async def test_one_bad_row_does_not_stop_the_pass(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    specs = [job(f"j{i}") for i in range(5)]
    await engine.tick(specs)
    handles = [fake.handle_for(idempotency_key(s)) for s in specs]
    for h in handles:
        fake.finish(h)
    fake.get_faults[handles[0]] = [InteractionGoneError("gone", 404)]
    fake.get_faults[handles[1]] = [MaybeCreatedError("timeout")]
    clock.advance(2)
    report = await engine.tick()
    assert report.counts["consumed"] == 3
    assert report.counts["errors"] == 2


async def test_404_resubmits(engine: Engine, fake: FakeBackend, clock: ManualClock) -> None:
    engine.config = replace(engine.config, retention=0.0)  # a 404 past retention
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    fake.forget(fake.handle_for(idem))
    clock.advance(2)
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED and row.attempts == 2


async def test_operator_retry_cancel_adopt(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    handle = fake.handle_for(idem)
    fake.fail(handle)
    clock.advance(2)
    await engine.tick()
    assert (await engine.ledger.get(idem)).status == Status.FAILED  # type: ignore[union-attr]
    row = await engine.operator.retry(idem, actor=Actor.CLI)
    assert row.status == Status.RESERVING and row.attempts == 0
    await engine.tick()
    row = await engine.operator.cancel(idem, actor=Actor.CLI)
    assert row.status == Status.CANCELLED
    events = await engine.ledger.events(idem)
    assert [e.actor for e in events].count("cli") >= 2


async def test_unexpected_create_exception_counts_as_maybe_created(
    engine: Engine, fake: FakeBackend
) -> None:
    fake.create_faults = [RuntimeError("bug after the request left")]  # type: ignore[list-item]
    spec = job("x")
    await engine.tick([spec])
    row = await engine.ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.RESERVING and row.inflight


async def test_orphans_stop_at_max_attempts(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    fake.supports_lookup = False
    fake.create_faults = [MaybeCreatedError("timeout")] * 10
    spec = job("x")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    for _ in range(8):
        clock.advance(400)
        await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.FAILED
    assert row.attempts == 5 and row.duplicates == 4
    assert "attempts exhausted" in (row.last_error or "")


def test_late_polls_move_to_the_next_grid_point() -> None:
    from reclaim_tui.core.engine.engine import EngineConfig

    config = EngineConfig(first_poll=2.0, poll_cap=300.0)
    # On time: poll 1 at age 2 → next at age 4.
    assert config.next_poll(100.0, 1, 102.0) == 104.0
    # Late: poll 1 happened at age 9 → next grid point after now is age 16.
    assert config.next_poll(100.0, 1, 109.0) == 116.0
    # Never due at once, even exactly on a grid point.
    assert config.next_poll(100.0, 1, 108.0) == 116.0
    # Capped.
    assert config.next_poll(100.0, 12, 100.0 + 5000.0) == 100.0 + 5000.0 + 300.0


async def test_cancelling_a_row_whose_interaction_completed_keeps_the_result(
    tmp_path: Path, db_url: str
) -> None:
    """Issue 10: `cancel` on a submitted row whose interaction had already
    completed threw the paid result away; now it is kept and delivered."""
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.sinks import DirectorySink
    from reclaim_tui.errors import OperatorError

    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=5.0)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"))
    try:
        spec = JobSpec(input="finished before the cancel", model="m")
        idem = idempotency_key(spec)
        await engine.submit([spec])
        clock.advance(10)  # it completed; nobody has polled yet
        try:
            await engine.operator.cancel(idem, actor=Actor.CLI)
        except OperatorError as exc:
            assert "already completed" in str(exc)
        else:
            raise AssertionError("a completed interaction was cancelled")
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.SUBMITTED
        await engine.tick()
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.CONSUMED
        assert (tmp_path / "out" / f"{idem}.md").read_text() == fake_output_text(spec.input)
        assert fake.calls["cancel"] == 0
    finally:
        await ledger.close()


async def test_a_cancel_refused_because_the_interaction_just_finished_keeps_it(
    tmp_path: Path, db_url: str
) -> None:
    """The real API answers 400 to a cancel of a finished interaction: the
    result it finished with is still collected, not thrown away."""
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.sinks import DirectorySink
    from reclaim_tui.errors import PermanentReadError

    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"))
    try:
        spec = JobSpec(input="finished as the cancel went out", model="m")
        idem = idempotency_key(spec)
        await engine.submit([spec])

        async def refusing_cancel(handle: str) -> object:
            fake.finish(handle)
            raise PermanentReadError("cancel answered HTTP 400: interaction is finished", 400)

        fake.cancel = refusing_cancel  # type: ignore[assignment,method-assign]
        row = await engine.operator.cancel(idem, actor=Actor.CLI)
        assert row.status == Status.SUBMITTED
        await engine.tick()
        row = await ledger.get(idem)  # type: ignore[assignment]
        assert row is not None and row.status == Status.CONSUMED
    finally:
        await ledger.close()
