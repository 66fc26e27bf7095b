"""Promises an outside attack broke (issue 10, items 1–5), each on the fake
backend and a manual clock: no wall-clock time is judged, waits are bounded.

1. A zombie's late create never cancels the interaction the row now holds.
2. The lease heartbeat survives a busy ledger and stops work once the lease is lost.
3. After a kill mid-batch only the creates in flight are unknown; rows never
   sent are never counted as possible duplicates.
4. With a lookup, "not found" is trusted only after the request window, and
   a resend after an unknown outcome is always a recorded possible duplicate.
5. Owners in another pid space (same hostname, another container) are never
   judged dead.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive, pid_space, this_process
from reclaim_tui.core.models import JobSpec, RemoteInteraction, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import LedgerBusyError

WAIT = 20.0  # a bound on waiting for an event, never a judgement of speed


@pytest.fixture
async def world(tmp_path: Path, db_url: str):  # type: ignore[no-untyped-def]
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    yield clock, ledger, DirectorySink(tmp_path / "out")
    await ledger.close()


class Gate(FakeBackend):
    """A fake whose creates wait at a gate: `store_first` stores the
    interaction before waiting (the answer is late), else after (the request
    is still on its way)."""

    def __init__(self, inner: FakeBackend, *, store_first: bool) -> None:
        super().__init__(clock=inner.clock, latency=inner.latency)
        self.inner = inner
        self.store_first = store_first
        self.reached = asyncio.Event()
        self.open = asyncio.Event()

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        if self.store_first:
            out = await self.inner.create(spec, idem)
            self.reached.set()
            await self.open.wait()
            return out
        self.reached.set()
        await self.open.wait()
        return await self.inner.create(spec, idem)

    async def get(self, handle: str) -> RemoteInteraction:
        return await self.inner.get(handle)

    async def cancel(self, handle: str) -> RemoteInteraction:
        return await self.inner.cancel(handle)

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        return await self.inner.find_by_label(idem, attempt)


# -- 1 ---------------------------------------------------------------------------
async def test_a_late_create_never_cancels_the_interaction_the_row_adopted(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=True)
    gate = Gate(fake, store_first=True)
    config = EngineConfig(lease_seconds=30)
    zombie = Engine(ledger, gate, sink, config=config, owner="z|1|zombie")
    other = Engine(ledger, fake, sink, config=config, owner="z|1|other")
    spec = JobSpec(input="adopted while its sender slept", model="m")
    idem = idempotency_key(spec)
    stalled = asyncio.create_task(zombie.submit([spec]))
    await asyncio.wait_for(gate.reached.wait(), WAIT)  # created; the answer is late
    clock.advance(31)  # the sender is alive (stopped) but its lease ran out
    adopted = await other.recover_orphans()
    assert adopted.counts["adopted"] == 1  # found by label: no second create
    gate.open.set()
    await asyncio.wait_for(stalled, WAIT)  # the zombie comes back with its answer
    (handle,) = [h for h, r in fake.remotes.items() if r.idem == idem]
    assert fake.remotes[handle].status != "cancelled", "the zombie cancelled the row's interaction"
    clock.advance(3)
    await other.tick()
    row = await ledger.get(idem)
    assert row is not None and row.status == Status.CONSUMED and row.handle == handle
    assert fake.creates_per_label[idem] == 1 and row.duplicates == 0


# -- 2 ---------------------------------------------------------------------------
async def test_the_heartbeat_survives_a_busy_ledger(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    real_renew = ledger.renew
    calls = {"failed": 0, "ok": 0}
    renewed_twice = asyncio.Event()

    async def renew(owner: str, idems: object, lease_seconds: float) -> set[str]:
        if calls["failed"] == 0:
            calls["failed"] += 1
            raise LedgerBusyError("locked past busy_timeout")
        held = await real_renew(owner, idems, lease_seconds)  # type: ignore[arg-type]
        calls["ok"] += 1
        if calls["ok"] >= 2:
            renewed_twice.set()
        return held

    monkeypatch.setattr(ledger, "renew", renew)
    fake = FakeBackend(clock=clock, latency=0.0)

    class Slow(FakeBackend):
        async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
            await asyncio.wait_for(renewed_twice.wait(), WAIT)
            return await fake.create(spec, idem)

    # A 0.3 s lease renews every 0.1 s of real time; the manual clock never
    # lets it run out, so only the failed renewal could stop the heartbeat.
    engine = Engine(ledger, Slow(clock=clock), sink, config=EngineConfig(lease_seconds=0.3))
    report = await engine.submit([JobSpec(input="slow create", model="m")])
    assert calls == {"failed": 1, "ok": calls["ok"]} and calls["ok"] >= 2
    assert report.counts["sent"] == 1 and report.counts["lease_lost"] == 0


async def test_work_stops_once_the_lease_is_lost(world, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    failures = asyncio.Event()
    real_renew = ledger.renew

    async def renew(owner: str, idems: object, lease_seconds: float) -> set[str]:
        if owner == "z|1|stuck":
            failures.set()
            raise LedgerBusyError("locked past busy_timeout")
        return await real_renew(owner, idems, lease_seconds)  # type: ignore[arg-type]

    monkeypatch.setattr(ledger, "renew", renew)
    fake = FakeBackend(clock=clock, latency=0.0)
    config = EngineConfig(lease_seconds=0.3, concurrency=1)
    heir = Engine(ledger, fake, sink, config=config, owner="z|1|heir")
    taken: list[str] = []

    class Stuck(FakeBackend):
        async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
            out = await fake.create(spec, idem)
            if not taken:
                await asyncio.wait_for(failures.wait(), WAIT)
                clock.advance(1.0)  # past the 0.3 s lease, never renewed
                claim = await ledger.claim_sendable(heir.owner, limit=10, lease_seconds=30)
                taken.extend(r.idem for r in claim.rows)  # another process took the rest
            return out

    stuck = Engine(ledger, Stuck(clock=clock), sink, config=config, owner="z|1|stuck")
    specs = [JobSpec(input=f"job {i}", model="m") for i in range(3)]
    report = await stuck.submit(specs)
    assert len(taken) == 2 and fake.calls["create"] == 1, "sent rows it no longer held"
    assert report.counts["sent"] == 1
    rows = {r.idem: r async for r in ledger.iter_rows()}
    assert all(rows[k].attempts == 0 and not rows[k].inflight for k in taken)


# -- 3 ---------------------------------------------------------------------------
async def test_a_kill_mid_batch_leaves_only_the_creates_in_flight_unknown(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    answered: list[str] = []
    hang = asyncio.Event()

    class Dying(FakeBackend):
        async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
            if len(answered) >= 6:
                hang.set()
                await asyncio.Event().wait()  # in flight when the process dies
            out = await fake.create(spec, idem)
            answered.append(idem)
            return out

    concurrency = 2
    config = EngineConfig(concurrency=concurrency, lease_seconds=30)
    engine = Engine(ledger, Dying(clock=clock), sink, config=config, owner="z|1|dying")
    specs = [JobSpec(input=f"batch job {i}", model="m") for i in range(20)]
    task = asyncio.create_task(engine.submit(specs))
    await asyncio.wait_for(hang.wait(), WAIT)
    async with asyncio.timeout(WAIT):  # the answered ones' group commit lands meanwhile
        handled = {r.idem async for r in ledger.iter_rows() if r.handle}
        while not set(answered) <= handled:  # polled: the ledger is another side
            await asyncio.sleep(0.01)
            handled = {r.idem async for r in ledger.iter_rows() if r.handle}
    task.cancel()  # the kill
    with pytest.raises(asyncio.CancelledError):
        await task

    rows = {r.idem: r async for r in ledger.iter_rows()}
    unknown = [r for r in rows.values() if r.inflight]
    assert len(unknown) <= concurrency, [r.idem for r in unknown]
    assert all(rows[i].handle for i in answered), "an answered create lost its handle"

    clock.advance(31)
    heir = Engine(ledger, fake, sink, config=config, owner="z|1|heir")
    await heir.tick()
    rows = {r.idem: r async for r in ledger.iter_rows()}
    assert sum(r.duplicates for r in rows.values()) == len(unknown) <= concurrency
    assert all(r.status == Status.SUBMITTED for r in rows.values())
    never_sent = [k for k in rows if k not in answered and k not in {r.idem for r in unknown}]
    assert never_sent and all(rows[k].duplicates == 0 for k in never_sent)


# -- 4 ---------------------------------------------------------------------------
async def test_not_found_is_no_proof_while_the_create_may_land(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=True)
    gate = Gate(fake, store_first=False)  # the request is still on its way
    config = EngineConfig(lease_seconds=30, lookup_window=60)
    holder = Engine(ledger, gate, sink, config=config, owner="z|1|holder")
    other = Engine(ledger, fake, sink, config=config, owner="z|1|other")
    spec = JobSpec(input="a slow create", model="m")
    idem = idempotency_key(spec)
    stalled = asyncio.create_task(holder.submit([spec]))
    await asyncio.wait_for(gate.reached.wait(), WAIT)
    clock.advance(31)  # lease gone, request window not yet
    first = await other.recover_orphans()
    assert first.counts["resubmitted"] == 0 and first.counts["waiting"] == 1
    gate.open.set()  # the create lands after all
    await asyncio.wait_for(stalled, WAIT)
    clock.advance(30)
    await other.tick()
    row = await ledger.get(idem)
    assert row is not None and row.status in (Status.SUBMITTED, Status.CONSUMED)
    assert fake.creates_per_label[idem] == 1 and row.duplicates == 0


async def test_a_resend_after_a_lookup_is_a_recorded_possible_duplicate(world) -> None:  # type: ignore[no-untyped-def]
    clock, ledger, sink = world
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=True)
    gate = Gate(fake, store_first=False)
    config = EngineConfig(lease_seconds=30, lookup_window=60)
    holder = Engine(ledger, gate, sink, config=config, owner="z|1|holder")
    other = Engine(ledger, fake, sink, config=config, owner="z|1|other")
    spec = JobSpec(input="never landed", model="m")
    stalled = asyncio.create_task(holder.submit([spec]))
    await asyncio.wait_for(gate.reached.wait(), WAIT)
    stalled.cancel()  # the holder dies with its request unsent
    clock.advance(61)
    report = await other.recover_orphans()
    assert report.counts["resubmitted"] == 1
    row = await ledger.get(idempotency_key(spec))
    assert row is not None and row.duplicates == 1


# -- 5 ---------------------------------------------------------------------------
def test_owners_in_another_pid_space_are_never_judged_dead() -> None:
    me = this_process()
    assert me.space == pid_space() and me.space is not None
    gone = 4_194_304_999  # no such pid anywhere
    here = LeaseOwner(socket.gethostname(), gone, "1", pid_space())
    assert holder_alive(str(here)) is False  # same pid space: provably dead
    container = LeaseOwner(socket.gethostname(), os.getpid(), "1", "0" * 16 + ".4026532000")
    assert holder_alive(str(container)) is None, "another container's live process judged dead"
    assert holder_alive(str(LeaseOwner(socket.gethostname(), gone, "1", None))) is None
    assert holder_alive(f"{socket.gethostname()}|{gone}|1") is None  # an old-format owner
