"""A reclaim pass polls a row at most once, and each claim of the pass
names only the rows it could take again: those of the batch in hand and
those still `submitted` whose next poll has come. A claim that named every
row polled so far grew with the pass (and SQLite parsed the list again for
every claim)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.inbox import InboxEvent
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

FLIGHT = 4


async def _noop(idem: str, result: StoredResult) -> None:
    return None


def _spy(ledger: Ledger) -> list[Collection[str]]:
    """Every skip list the pass's combined write-and-claim was given."""
    seen: list[Collection[str]] = []
    real = ledger.apply_and_claim_pollable

    async def spied(*args: Any, **kw: Any) -> Any:
        seen.append(set(kw.get("exclude", ())))
        return await real(*args, **kw)

    ledger.apply_and_claim_pollable = spied  # type: ignore[method-assign]
    return seen


async def _engine(tmp_path: Path, clock: ManualClock, fake: FakeBackend, n: int) -> Engine:
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    engine = Engine(
        ledger,
        fake,
        CallableSink(_noop),
        owner="test|1|a",
        config=EngineConfig(concurrency=FLIGHT),
    )
    await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(n)])
    return engine


async def test_each_claim_skips_at_most_the_batch_in_hand(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = FakeBackend(clock=clock, latency=0.0)
    engine = await _engine(tmp_path, clock, fake, 120)
    try:
        clock.advance(5)
        seen = _spy(engine.ledger)
        report = await engine.reclaim()
        assert report.counts["completed"] == 120
        assert len(seen) >= 120 // FLIGHT  # a claim with every batch's outcomes
        # Rows already `done` cannot be claimed for a poll: never named.
        assert max(len(s) for s in seen) <= FLIGHT, [len(s) for s in seen]
    finally:
        await engine.ledger.close()


async def test_a_row_due_again_within_the_pass_waits_for_the_next(tmp_path: Path) -> None:
    clock = ManualClock()
    fake = FakeBackend(clock=clock, latency=None)  # running until told otherwise
    engine = await _engine(tmp_path, clock, fake, 40)
    try:
        clock.advance(5)
        # Every answer takes long enough for each row's next poll to come
        # during the pass: a claim could take every polled row again.
        fake.on_call = lambda call, _handle: clock.advance(60) if call == "get" else None
        seen = _spy(engine.ledger)
        report = await engine.reclaim()
        assert report.counts["polled"] == 40
        assert fake.calls["get"] == 40  # once each, not again in the same pass
        assert len(seen[-1]) >= 40 - FLIGHT  # skipped because due again, not because named
        report = await engine.reclaim()
        assert fake.calls["get"] == 80  # the next pass polls each again, once
    finally:
        await engine.ledger.close()


@pytest.mark.parametrize("jobs", [10, 12])
async def test_a_row_an_event_makes_due_within_the_pass_waits_for_the_next(
    tmp_path: Path, jobs: int
) -> None:
    """The skip list trusts the next poll the pass wrote; an event from the
    inbox (a webhook received while the pass runs) moves a running row's
    next poll to now. The pass still polls it once: the event is for the
    next pass. (10 jobs: a claim takes the last two rows never polled and
    two woken ones; 12: a claim takes only woken rows.)"""
    clock = ManualClock()
    fake = FakeBackend(clock=clock, latency=None)  # running until told otherwise
    engine = await _engine(tmp_path, clock, fake, jobs)
    try:
        clock.advance(5)
        got: list[str] = []
        fake.on_call = lambda call, handle: got.append(handle) if call == "get" else None
        woken: set[str] = set()
        written: list[str] = []  # polled, and their outcome written by an earlier call
        real = engine.ledger.apply_and_claim_pollable

        async def events_arrive(*args: Any, **kw: Any) -> Any:
            for handle in [h for h in written if h not in woken]:
                woken.add(handle)  # one event an interaction
                event = InboxEvent(
                    f"wh-{handle}", clock.now(), "interaction.status_update", handle,
                    None, "in_progress", "hmac",
                )  # fmt: skip
                assert await inbox.record(engine.ledger, event)
            out = await real(*args, **kw)
            written[:] = got
            return out

        engine.ledger.apply_and_claim_pollable = events_arrive  # type: ignore[method-assign]
        report = await engine.reclaim()
        assert len(woken) >= jobs - FLIGHT  # an event for each row polled before the last claim
        assert sorted(got) == sorted(set(got)), sorted(got)  # each polled once
        assert report.counts["polled"] == jobs
        clock.advance(60)
        report = await engine.reclaim()
        assert fake.calls["get"] == 2 * jobs  # the next pass polls each again, once
    finally:
        await engine.ledger.close()
