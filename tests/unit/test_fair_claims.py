"""Fair work across hosts (issue 23, point 6): a process claims to send at
most what it can have in flight, so several processes on one ledger share
the creates, and a dead one holds (and delays) only that much. Counts only:
the fake backend, a manual clock, no time judged."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.models import JobSpec, RemoteInteraction
from reclaim_tui.core.sinks import DirectorySink

WAIT = 20.0  # a bound on waiting for an event, never a judgement of speed
JOBS = 120
CONCURRENCY = 4


class Held(FakeBackend):
    """Creates that wait at a gate once they are in flight (the first one
    alone: a cold circuit sends one create before the others, circuit.py)."""

    def __init__(self, inner: FakeBackend) -> None:
        super().__init__(clock=inner.clock, latency=inner.latency)
        self.inner = inner
        self.sending = asyncio.Event()
        self.open = asyncio.Event()

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        self.sending.set()
        await self.open.wait()
        return await self.inner.create(spec, idem)


async def test_processes_share_the_sends_and_a_stuck_one_holds_only_its_flight(
    tmp_path: Path, db_url: str
) -> None:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    claimed: Counter[str] = Counter()
    real_claim = ledger.claim_sendable

    async def counted(owner: str, *, limit: int, lease_seconds: float) -> Claim:
        got = await real_claim(owner, limit=limit, lease_seconds=lease_seconds)
        claimed[owner] += len(got.rows)
        return got

    ledger.claim_sendable = counted  # type: ignore[method-assign]
    real_ride = ledger.write_and_claim_sendable

    async def ridden(owner: str, *args: Any, **kw: Any) -> tuple[Any, Any, Claim]:
        # The next batch taken with a batch's last write: claimed all the same.
        marked, applied, got = await real_ride(owner, *args, **kw)
        claimed[owner] += len(got.rows)
        return marked, applied, got

    ledger.write_and_claim_sendable = ridden  # type: ignore[method-assign]
    try:
        specs = [JobSpec(input=f"shared job {i}", model="m") for i in range(JOBS)]
        fake = FakeBackend(clock=clock, latency=0.0)
        config = EngineConfig(concurrency=CONCURRENCY)  # batch_size: the default 500
        sink = DirectorySink(tmp_path / "out")
        stuck = Held(fake)
        first = Engine(ledger, stuck, sink, config=config, owner="h|1|stuck")
        await first.submit(specs, send=False)
        # The first process sends, and its creates hang (a host that stops).
        task = asyncio.create_task(first.send_reserved())
        await asyncio.wait_for(stuck.sending.wait(), WAIT)
        # Two more processes on the same ledger do the rest between them.
        others = [Engine(ledger, fake, sink, config=config, owner=f"h|{n}|other") for n in (2, 3)]
        reports = await asyncio.gather(*(e.send_reserved() for e in others))
        stuck.open.set()
        mine = await asyncio.wait_for(task, WAIT)
    finally:
        await ledger.close()
    # The stuck process held what it had in flight, no more; the others sent the rest.
    assert claimed["h|1|stuck"] == CONCURRENCY, claimed
    assert mine.counts["sent"] == CONCURRENCY
    assert sum(r.counts["sent"] for r in reports) == JOBS - CONCURRENCY
    assert all(n <= JOBS for n in claimed.values())
    assert fake.calls["create"] == JOBS  # every job created once


@pytest.mark.parametrize("concurrency", [1, 7])
async def test_a_send_claim_takes_at_most_the_flight(
    tmp_path: Path, db_url: str, concurrency: int
) -> None:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    sizes: list[int] = []
    real_claim = ledger.claim_sendable

    async def counted(owner: str, *, limit: int, lease_seconds: float, **scope: Any) -> Claim:
        # `scope`: a submit sends its own jobs only (the claim's `idems`).
        got = await real_claim(owner, limit=limit, lease_seconds=lease_seconds, **scope)
        sizes.append(len(got.rows))
        return got

    ledger.claim_sendable = counted  # type: ignore[method-assign]
    real_ride = ledger.write_and_claim_sendable

    async def ridden(owner: str, *args: Any, **kw: Any) -> tuple[Any, Any, Claim]:
        # The next batch taken with a batch's last write: claimed all the same.
        marked, applied, got = await real_ride(owner, *args, **kw)
        sizes.append(len(got.rows))
        return marked, applied, got

    ledger.write_and_claim_sendable = ridden  # type: ignore[method-assign]
    try:
        fake = FakeBackend(clock=clock, latency=0.0)
        config = EngineConfig(concurrency=concurrency)
        engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config)
        specs = [JobSpec(input=f"job {i}", model="m") for i in range(20)]
        report = await engine.submit(specs)
    finally:
        await ledger.close()
    assert report.counts["sent"] == 20
    assert max(sizes) == concurrency and sum(sizes) == 20
