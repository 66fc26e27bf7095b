"""A submit's send pass names a bounded part of its unsent keys in each claim.

Each claim of a submit is scoped to the submit's keys; naming every key again
in every claim made the keys bound grow with the square of the submit's size
(a 5,000-job submit bound 400,000 keys over its 80 claims). Now a claim
names the first few batches' worth of the keys still unsent. Counted, not
timed: the keys handed to the ledger's sendable claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.engine.sending import WINDOW_BATCHES
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

JOBS = 640
FLIGHT = 32


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def test_a_submits_claims_name_only_the_keys_left(tmp_path: Path) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "l.db", clock=clock)
    bound: list[int] = []

    def counting(method: Any) -> Any:
        async def claim(*args: Any, idems: Sequence[str] | None = None, **kw: Any) -> Any:
            bound.append(len(idems or ()))
            return await method(*args, idems=idems, **kw)

        return claim

    ledger.claim_sendable = counting(ledger.claim_sendable)  # type: ignore[method-assign]
    ledger.write_and_claim_sendable = counting(  # type: ignore[method-assign]
        ledger.write_and_claim_sendable
    )
    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(_noop),
        owner="t|1|x",
        config=EngineConfig(batch_size=FLIGHT, concurrency=FLIGHT),
    )
    try:
        report = await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(JOBS)])
        counts = await ledger.counts()
    finally:
        await ledger.close()
    assert report.counts["sent"] == JOBS, report.summary()
    assert counts["submitted"][0] == JOBS
    # One claim per batch of FLIGHT (and one that finds none left), each
    # naming at most a few batches' worth of the keys left: the keys bound
    # grow with the submit, not its square (before: all JOBS keys each time).
    assert JOBS // FLIGHT <= len(bound) <= JOBS // FLIGHT + 2, bound
    assert max(bound) <= WINDOW_BATCHES * FLIGHT, bound


async def test_keys_past_the_first_ones_are_sent_when_those_are_held(tmp_path: Path) -> None:
    """The first keys left are held by another process: the submit sends
    every other key all the same (a claim over all the keys left)."""
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "l.db", clock=clock)
    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(_noop),
        owner="t|1|x",
        config=EngineConfig(batch_size=FLIGHT, concurrency=FLIGHT),
    )
    jobs = [JobSpec(input=f"job {i}", model="m") for i in range(JOBS)]
    held = 2 * WINDOW_BATCHES * FLIGHT
    try:
        await engine.submit(jobs, send=False)
        keys = [idempotency_key(j) for j in jobs]
        taken = await ledger.claim_sendable(
            "other|2|y", limit=held, lease_seconds=600, idems=keys[:held]
        )
        assert len(taken.rows) == held
        report = await engine.submit(jobs)
        counts = await ledger.counts()
    finally:
        await ledger.close()
    assert report.counts["sent"] == JOBS - held, report.summary()
    assert counts["submitted"][0] == JOBS - held
    assert counts["reserving"][0] == held
