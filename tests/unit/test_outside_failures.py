"""Failures that are not the job's fault (issue 10): a refused key, a dead
network, a rate limit or an API at capacity never spends a job's attempts
nor fails it; a circuit breaker stops the pass and says why; once the cause
is gone every job completes with no operator action."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.circuit import Circuit
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import (
    BackendError,
    MaybeCreatedError,
    NotCreatedError,
    TransientReadError,
)

CONFIG = EngineConfig(max_attempts=5, circuit_threshold=5)


@pytest.fixture
async def ledger(db_url: str):  # type: ignore[no-untyped-def]
    ledger = await open_ledger(db_url, clock=ManualClock())
    yield ledger
    await ledger.close()


def _auth() -> NotCreatedError:
    return NotCreatedError(
        "create answered HTTP 400: API key not valid", 400, retryable=True, cause="auth"
    )


async def test_a_refused_key_spends_no_attempt_and_the_circuit_stops_the_pass(
    ledger: Ledger, tmp_path: Path
) -> None:
    clock = ledger.clock
    assert isinstance(clock, ManualClock)
    fake = FakeBackend(clock=clock, latency=0.0, create_faults=[_auth() for _ in range(100)])
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=CONFIG)
    specs = [JobSpec(input=f"job {i}", model="m") for i in range(40)]
    for _ in range(8):  # eight cron ticks into an outage
        report = await engine.tick(specs)
        assert report.unavailable is not None and report.unavailable[0] == "auth"
        clock.advance(7 * 24 * 3600)  # past any retry delay
    # Five failures open the circuit; each later pass of this engine probes once.
    assert fake.calls["create"] == CONFIG.circuit_threshold + 7, "the circuit did not stop calls"
    rows = [r async for r in ledger.iter_rows()]
    assert {r.status for r in rows} == {Status.RESERVING}
    assert all(r.attempts == 0 and not r.inflight for r in rows), "attempts were spent"
    assert all(r.lease_owner is None for r in rows), "untouched rows kept their leases"

    fake.create_faults.clear()  # the key is fixed
    for _ in range(3):
        report = await engine.tick()
        clock.advance(10)
    assert report.unavailable is None
    rows = [r async for r in ledger.iter_rows()]
    assert {r.status for r in rows} == {Status.CONSUMED}
    assert all(r.attempts == 1 and r.duplicates == 0 for r in rows)


async def test_retry_after_and_the_outside_schedule_pace_the_retries(
    ledger: Ledger, tmp_path: Path
) -> None:
    clock = ledger.clock
    assert isinstance(clock, ManualClock)
    limited = NotCreatedError("429", 429, retryable=True, cause="rate_limit", retry_after=3600.0)
    fake = FakeBackend(clock=clock, latency=0.0, create_faults=[limited])
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=CONFIG)
    spec = JobSpec(input="rate limited", model="m")
    await engine.submit([spec])
    row = await ledger.get(idempotency_key(spec))
    assert row is not None and row.attempts == 0 and row.outside_streak == 1
    assert row.next_at == clock.now() + 3600.0  # Retry-After beats the 16 s schedule
    assert CONFIG.retry_delay(10, "k") >= 2.7 * 3600  # hours, not seconds
    assert CONFIG.retry_delay(30, "k") == CONFIG.retry_cap


async def test_polls_failing_outside_never_fail_the_job(ledger: Ledger, tmp_path: Path) -> None:
    clock = ledger.clock
    assert isinstance(clock, ManualClock)
    fake = FakeBackend(clock=clock, latency=None)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=CONFIG)
    spec = JobSpec(input="capacity", model="m")
    await engine.submit([spec])
    row = await ledger.get(idempotency_key(spec))
    assert row is not None and row.handle
    fake.get_faults[row.handle] = [
        TransientReadError("503", 503, cause="capacity") for _ in range(150)
    ]
    for _ in range(150):  # more than max_read_errors (100)
        clock.advance(CONFIG.retry_cap + 1)
        await engine.tick()
    row = await ledger.get(spec_key := idempotency_key(spec))
    assert row is not None and row.status == Status.SUBMITTED and row.error_streak == 0
    assert fake.calls["get"] == 150  # the circuit stopped nothing: one row, one probe a tick
    fake.finish(row.handle)  # type: ignore[arg-type]
    clock.advance(CONFIG.retry_cap + 1)
    await engine.tick()
    row = await ledger.get(spec_key)
    assert row is not None and row.status == Status.CONSUMED


def test_the_circuit_counts_only_outside_failures_in_a_row() -> None:
    circuit = Circuit(threshold=3)
    outside = TransientReadError("down", cause="transport")
    for outcome in (outside, outside, BackendError("the job's own"), outside, outside):
        circuit.record(outcome)
    assert not circuit.open
    circuit.record(outside)
    assert circuit.open
    circuit.next_pass()  # a long-lived engine probes once
    assert not circuit.open and circuit.probing
    circuit.record(MaybeCreatedError("503", 503, cause="capacity"))
    assert circuit.open
    circuit.next_pass()
    circuit.record(object())  # a success closes it for good
    assert not circuit.open and not circuit.probing
