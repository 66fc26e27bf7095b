"""Adaptive concurrency (issue 14, `--adaptive-concurrency`): a pass keeps
more calls in flight while the API keeps up, fewer after a 429/503; the
default (16) and an explicit --concurrency are fixed. Counted, never timed."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.pacing import AdaptiveLimit
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, RemoteInteraction
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import BackendError


def test_the_limit_doubles_while_latency_holds_and_halves_on_a_refusal() -> None:
    limit = AdaptiveLimit(start=4, ceiling=32)
    seen = [limit.observe(0.05, None) for _ in range(4)]
    assert seen == [4, 4, 4, 8]  # a window of 4 calls at the first latency: double
    for _ in range(8):
        limit.observe(0.06, None)  # within 1.5x of the first window
    assert limit.current == 16
    for _ in range(16):
        limit.observe(0.5, None)  # 10x slower: the API is the bottleneck, hold
    assert limit.current == 16
    assert limit.observe(0.05, "rate_limit") == 8  # a 429: halve, and hold for the pass
    for _ in range(100):
        limit.observe(0.05, None)
    assert limit.current == 8
    limit.begin_pass()
    for _ in range(8):
        limit.observe(0.05, None)
    assert limit.current == 16  # the next pass may grow again
    fixed = AdaptiveLimit(start=16, ceiling=16)
    assert [fixed.observe(0.01, None) for _ in range(100)][-1] == 16
    assert fixed.observe(0.01, "capacity") == 16


class CountingGets(FakeBackend):
    """Counts the most gets in flight at once; each waits a little."""

    in_flight = 0
    most = 0
    refuse_every = 0

    async def get(self, handle: str) -> RemoteInteraction:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            # Network-bound, like the API: waiting dominates the client's CPU.
            await asyncio.sleep(0.02)
            n = self.calls["get"] + 1
            if self.refuse_every and n % self.refuse_every == 0:
                self.calls["get"] += 1
                raise BackendError("429 too many requests", cause="rate_limit")
            return await super().get(handle)
        finally:
            self.in_flight -= 1


async def _sweep(
    tmp_path: Path, db_url: str, settings: Settings, refuse_every: int = 0
) -> tuple[int, int]:
    """One reclaim pass over 600 due rows: the most gets that were in flight,
    and the limit at its end."""
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    try:
        fake = CountingGets(clock=clock, latency=None)
        config = dataclasses.replace(settings.engine_config(), batch_size=600)
        engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config)
        await engine.submit([JobSpec(input=f"sweep {n}", model="m") for n in range(600)])
        clock.advance(config.first_poll + 0.5)  # every row due once
        fake.refuse_every = refuse_every
        await engine.reclaim()
        assert fake.calls["get"] >= 600
        return fake.most, engine.limit.current
    finally:
        await ledger.close()


async def test_adaptive_a_sweep_grows_past_16_calls_in_flight(tmp_path: Path, db_url: str) -> None:
    most, _ = await _sweep(tmp_path, db_url, Settings(adaptive_concurrency=True))
    assert most > 16


async def test_an_explicit_concurrency_is_never_exceeded(tmp_path: Path, db_url: str) -> None:
    most, limit = await _sweep(tmp_path, db_url, Settings(concurrency=8))
    assert most <= 8 and limit == 8


async def test_by_default_16_is_never_exceeded(tmp_path: Path, db_url: str) -> None:
    most, limit = await _sweep(tmp_path, db_url, Settings())
    assert most <= 16 and limit == 16


async def test_rate_limits_keep_the_adaptive_limit_at_its_start(
    tmp_path: Path, db_url: str
) -> None:
    # The sends grew the limit (no refusals); the gets meet a 429 every third
    # call: halved back to the start and held there for the pass.
    _, limit = await _sweep(tmp_path, db_url, Settings(adaptive_concurrency=True), refuse_every=3)
    assert limit == 16


def test_the_window_median_is_statistics_median() -> None:
    """pacing.py computes the median itself (statistics costs ~14 ms of every
    command's start-up); it must agree with statistics.median, odd and even."""
    import random
    import statistics

    from reclaim_tui.core.engine.pacing import _median

    rnd = random.Random(27)
    for n in range(1, 40):
        values = [rnd.uniform(0, 5) for _ in range(n)]
        assert _median(values) == statistics.median(values)
