"""One named regression test per defect of the original design (DESIGN.md §3).

Each scenario is one the original `tick()` gets wrong; defects 5 and 6 (SDK
hidden retries, non-existent API members) need the real SDK and live in
tests/contract/test_seed_defects_sdk.py.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, JobSpec, RemoteInteraction, Status, StoredResult
from reclaim_tui.core.sinks import CallableSink, DirectorySink
from reclaim_tui.errors import InteractionGoneError, NotCreatedError, TransientReadError


def job(text: str) -> JobSpec:
    return JobSpec(input=text, model="m")


async def test_defect_01_failed_create_is_sent_again(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    """Original: reserve() refuses the existing row, so the job is never re-sent."""
    spec = job("a")
    fake.create_faults = [NotCreatedError("connection refused", None, retryable=True)]
    await engine.tick([spec])
    clock.advance(60)
    await engine.tick([spec])  # the same job again, as cron would pass it
    row = await engine.ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.SUBMITTED and row.attempts == 2


async def test_defect_02_spec_is_stored_and_ledger_resubmits_alone(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    """Original: the spec is not stored; only the caller can resubmit."""
    spec = JobSpec(input="a", model="m", config={"system_instruction": "be brief"})
    fake.create_faults = [NotCreatedError("503?", 429, retryable=True)]
    await engine.tick([spec])
    clock.advance(60)
    await engine.tick()  # no jobs passed: the ledger resubmits from its stored spec
    row = await engine.ledger.get(idempotency_key(spec))
    assert row is not None and row.status == Status.SUBMITTED
    assert row.job == JobSpec(input="a", model="m", config={"system_instruction": "be brief"})
    assert fake.remotes[row.handle or ""].spec.config == {"system_instruction": "be brief"}


async def test_defect_03_replay_uses_stored_result_after_provider_dropped_it(
    ledger: Ledger, fake: FakeBackend, clock: ManualClock, out_dir: Path
) -> None:
    """Original: resume_unfinished re-fetches the result and fails for ever once
    the provider has dropped the interaction."""
    attempts: Counter[str] = Counter()
    real = DirectorySink(out_dir)

    async def flaky(idem: str, result: StoredResult) -> None:
        attempts[idem] += 1
        if attempts[idem] == 1:
            raise OSError("disk full")
        await real.deliver(idem, result)

    engine = Engine(ledger, fake, CallableSink(flaky), owner="t|1|x")
    spec = job("a")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    handle = fake.handle_for(idem)
    fake.finish(handle)
    clock.advance(2)
    await engine.tick()
    row = await ledger.get(idem)
    assert row is not None and row.status == Status.DONE and "disk full" in (row.last_error or "")
    fake.forget(handle)  # the provider no longer has it
    gets_before = fake.calls["get"]
    clock.advance(600)
    await engine.tick()
    row = await ledger.get(idem)
    assert row is not None and row.status == Status.CONSUMED
    assert fake.calls["get"] == gets_before  # replay never asked the API
    assert (out_dir / f"{idem}.md").read_text() == fake_output_text("a")


async def test_defect_04_overlapping_ticks_run_the_side_effect_once(
    db_url: str, clock: ManualClock
) -> None:
    """Original: no lease, so two overlapping ticks both run on_result."""
    fake = FakeBackend(clock=clock, latency=0.0)
    delivered: Counter[str] = Counter()

    async def sink(idem: str, result: StoredResult) -> None:
        delivered[idem] += 1
        await asyncio.sleep(0)

    ledgers = [await open_ledger(db_url, clock=clock) for _ in range(2)]
    engines = [
        Engine(led, fake, CallableSink(sink), owner=f"t|1|{i}", config=EngineConfig(batch_size=7))
        for i, led in enumerate(ledgers)
    ]
    specs = [job(f"j{i}") for i in range(40)]
    await asyncio.gather(*(e.tick(specs) for e in engines))
    for _ in range(3):
        clock.advance(5)
        await asyncio.gather(*(e.tick() for e in engines))
    for led in ledgers:
        await led.close()
    assert set(delivered.values()) == {1} and len(delivered) == 40
    assert set(fake.creates_per_label.values()) == {1} and len(fake.creates_per_label) == 40


async def test_defect_07_polling_is_concurrent(
    ledger: Ledger, clock: ManualClock, out_dir: Path
) -> None:
    """Original: N in-flight rows cost N sequential round trips per tick."""
    in_flight = 0
    peak = 0

    class SlowGets(FakeBackend):
        async def get(self, handle: str) -> RemoteInteraction:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return await super().get(handle)

    fake = SlowGets(clock=clock, latency=None)
    engine = Engine(
        ledger, fake, DirectorySink(out_dir), owner="t|1|x", config=EngineConfig(concurrency=16)
    )
    await engine.tick([job(f"j{i}") for i in range(64)])
    clock.advance(2)
    report = await engine.tick()
    assert report.counts["polled"] == 64
    assert peak == 16


async def test_defect_08_one_error_does_not_abort_the_tick(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    """Original: one exception (404, timeout) aborts the whole tick, so the rows
    after it are not reclaimed and new jobs are not submitted."""
    first = [job(f"j{i}") for i in range(4)]
    await engine.tick(first)
    handles = [fake.handle_for(idempotency_key(s)) for s in first]
    for h in handles:
        fake.finish(h)
    fake.get_faults[handles[0]] = [TransientReadError("timeout")]
    fake.get_faults[handles[1]] = [InteractionGoneError("gone", 404)]
    clock.advance(2)
    report = await engine.tick([job("new")])
    assert report.counts["consumed"] == 2
    new = await engine.ledger.get(idempotency_key(job("new")))
    assert new is not None and new.status == Status.SUBMITTED


async def test_defect_09_failed_keeps_its_reason_and_can_be_retried(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    """Original: `failed` keeps no reason and has no retry or operator path."""
    spec = job("a")
    idem = idempotency_key(spec)
    await engine.tick([spec])
    fake.fail(fake.handle_for(idem), error="safety block")
    clock.advance(2)
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.FAILED
    assert row.last_error == "API status failed: safety block"
    await engine.operator.retry(idem, actor=Actor.CLI)
    await engine.tick()
    row = await engine.ledger.get(idem)
    assert row is not None and row.status == Status.SUBMITTED and fake.creates_per_label[idem] == 2


async def test_defect_10_other_statuses_are_handled(
    engine: Engine, fake: FakeBackend, clock: ManualClock
) -> None:
    """Original: only done/error exist; requires_action, incomplete and unknown
    strings fall through."""
    specs = {
        s: job(s)
        for s in (
            "requires_action",
            "incomplete",
            "budget_exceeded",
            "weird_new_status",
            "requires_continuation",
        )
    }
    await engine.tick(list(specs.values()))
    for status, spec in specs.items():
        fake.fail(fake.handle_for(idempotency_key(spec)), status=status, error="")
    clock.advance(2)
    await engine.tick()
    for status, spec in specs.items():
        row = await engine.ledger.get(idempotency_key(spec))
        assert row is not None
        if status == "weird_new_status":
            assert row.status == Status.SUBMITTED
            assert "unknown API status 'weird_new_status'" in (row.last_error or "")
        elif status == "requires_action":
            # Issue 11: someone must answer; the row waits, held for an operator.
            assert row.status == Status.SUBMITTED and row.held
            assert "requires action" in (row.last_error or "")
        elif status == "requires_continuation":
            # Server-managed continuation of a background interaction: still running.
            assert row.status == Status.SUBMITTED and not row.held
        else:
            assert row.status == Status.FAILED and status in (row.last_error or "")
            stored = await engine.ledger.result(row.idem)
            assert stored is not None  # paid partial output is kept
