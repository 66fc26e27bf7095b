"""Lanes (core/engine/lanes.py): on PostgreSQL the send and reclaim passes
run as several claim–write loops at once, each on a connection and under an
owner of its own. Counts only: the fake backend, a manual clock, no time
judged."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine import lanes
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.fleet import read_fleet
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import holder_alive, lane_owner, lanes_process, this_process
from reclaim_tui.core.ledger.port import Claim, Ledger
from reclaim_tui.core.models import Actor, JobSpec, PassReport, RemoteInteraction, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import ConfigError, LedgerError, NotCreatedError, OperatorError

WAIT = 20.0  # a bound on waiting for an event, never a judgement of speed


# -- owners and shares ------------------------------------------------------------------
def test_a_lane_owner_lives_and_dies_with_its_process() -> None:
    mine = str(this_process())
    lane = lanes.lane_owner(mine, 1)
    assert lane != mine and lane.startswith(mine.split("|")[0])
    assert lanes.lane_owner(mine, 1) != lanes.lane_owner(mine, 2)
    assert holder_alive(lane) is True
    # The same lane of a process that has ended is judged dead at once.
    child = subprocess.run(
        [sys.executable, "-c", "from reclaim_tui.core.ledger.owner import this_process;"
         " print(this_process())"],
        capture_output=True, text=True, check=True, env={**os.environ},
    )  # fmt: skip
    gone = child.stdout.strip()
    assert holder_alive(gone) is False
    assert holder_alive(lanes.lane_owner(gone, 3)) is False


def test_an_owner_that_does_not_parse_gets_a_suffix() -> None:
    assert lanes.lane_owner("worker-a", 2) == "worker-a-lane2"


@pytest.mark.parametrize(
    ("total", "count", "expected"),
    [(16, 1, [16]), (16, 2, [8, 8]), (16, 3, [6, 5, 5]), (3, 3, [1, 1, 1]), (64, 4, [16] * 4)],
)
def test_the_calls_in_flight_are_shared_out(total: int, count: int, expected: list[int]) -> None:
    assert lanes.shares(total, count) == expected
    configs = [lanes.lane_config(EngineConfig(concurrency=total), count, n) for n in range(count)]
    assert sum(c.concurrency for c in configs) == total


def test_an_adaptive_ceiling_is_shared_out_too() -> None:
    config = EngineConfig(concurrency=16, max_concurrency=64)
    got = [lanes.lane_config(config, 3, n) for n in range(3)]
    assert [(c.concurrency, c.max_concurrency) for c in got] == [(6, 22), (5, 21), (5, 21)]


# -- across: every lane finishes, the first failure is raised ---------------------------
async def test_a_failing_lane_lets_the_others_finish_and_its_report_is_whole() -> None:
    finished: list[int] = []
    gate = asyncio.Event()

    async def step(n: int, _: Any) -> PassReport:
        report = PassReport()
        report.counts["sent"] += 10 * (n + 1)
        if n == 0:
            exc = LedgerError("the server went away")
            exc.report = report
            gate.set()
            raise exc
        await gate.wait()  # still working when lane 0 fails
        await asyncio.sleep(0)
        finished.append(n)
        return report

    with pytest.raises(LedgerError, match="went away") as caught:
        await lanes.across([object(), object(), object()], step)  # type: ignore[list-item]
    assert finished == [1, 2]
    assert caught.value.report.counts["sent"] == 10 + 20 + 30


async def test_an_error_of_another_kind_is_raised_once_every_lane_ended() -> None:
    ended: list[int] = []

    async def step(n: int, _: Any) -> PassReport:
        await asyncio.sleep(0)
        ended.append(n)
        if n == 1:
            raise RuntimeError("a bug in lane 1")
        return PassReport()

    with pytest.raises(RuntimeError, match="lane 1"):
        await lanes.across([object(), object()], step)  # type: ignore[list-item]
    assert sorted(ended) == [0, 1]


# -- the engine on PostgreSQL ------------------------------------------------------------
class InFlight(FakeBackend):
    """Counts the creates and polls in flight at once."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__(clock=clock, latency=0.0)
        self.now = 0
        self.most = 0

    async def _counted(self, call: Any) -> RemoteInteraction:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            result: RemoteInteraction = await call
            return result
        finally:
            self.now -= 1

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        return await self._counted(super().create(spec, idem))

    async def get(self, handle: str) -> RemoteInteraction:
        return await self._counted(super().get(handle))


def _count_claims(ledger: Ledger, claimed: Counter[str]) -> None:
    """Count the rows each owner claims to send on `ledger`."""
    real_claim, real_ride = ledger.claim_sendable, ledger.write_and_claim_sendable

    async def counted(owner: str, **kw: Any) -> Claim:
        got = await real_claim(owner, **kw)
        claimed[owner] += len(got.rows)
        return got

    async def ridden(owner: str, *args: Any, **kw: Any) -> tuple[Any, Any, Claim]:
        marked, applied, got = await real_ride(owner, *args, **kw)
        claimed[owner] += len(got.rows)
        return marked, applied, got

    ledger.claim_sendable = counted  # type: ignore[method-assign]
    ledger.write_and_claim_sendable = ridden  # type: ignore[method-assign]


@pytest.mark.postgres
@pytest.mark.parametrize("count", [2, 3])
async def test_lanes_send_and_reclaim_every_job_once(
    tmp_path: Path, pg_dsn: str, count: int
) -> None:
    clock = ManualClock()
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(count)]
    claimed: Counter[str] = Counter()
    for ledger in ledgers:
        _count_claims(ledger, claimed)
    try:
        backend = InFlight(clock)
        config = EngineConfig(concurrency=6, batch_size=500)
        engine = Engine(
            ledgers[0],
            backend,
            DirectorySink(tmp_path / "out"),
            config=config,
            owner="h|1|s",
            lane_ledgers=ledgers[1:],
        )
        specs = [JobSpec(input=f"lane job {i}", model="m") for i in range(90)]
        sent = await engine.submit(specs)
        clock.advance(5)
        ticked = await engine.tick()
        counts = await ledgers[0].counts()
        statuses = {r[0] for r in await ledgers[0].select("SELECT status FROM jobs")}
    finally:
        for ledger in ledgers:
            await ledger.close()
    assert sent.counts["sent"] == 90
    assert ticked.counts["consumed"] == 90
    assert counts["consumed"][0] == 90 and sum(n for n, _ in counts.values()) == 90
    assert backend.calls["create"] == 90  # no job created twice
    # Every lane sent its share, under its own owner.
    owners = {"h|1|s", *(lanes.lane_owner("h|1|s", n) for n in range(1, count))}
    assert set(claimed) == owners and sum(claimed.values()) == 90, claimed
    # The calls in flight stayed within --concurrency across the lanes.
    assert 1 < backend.most <= 6
    assert len(list((tmp_path / "out").glob("*.json"))) == 90
    assert statuses == {Status.CONSUMED.value}


class Gated(FakeBackend):
    """The first create answers (the circuit warms, the other lanes start);
    the next ones wait at `gate`, and `waiting` is set once `count` do."""

    def __init__(self, clock: ManualClock, count: int, latency: float | None = 0.0) -> None:
        super().__init__(clock=clock, latency=latency)
        self.gate, self.waiting = asyncio.Event(), asyncio.Event()
        self.started: Counter[str] = Counter()
        self.count = count

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        self.started[idem] += 1
        if sum(self.started.values()) > 1:
            if sum(self.started.values()) == self.count + 1:
                self.waiting.set()
            await self.gate.wait()
        return await super().create(spec, idem)


async def _sends_held(
    tmp_path: Path, ledgers: list[Ledger], backend: Gated, concurrency: int, jobs: int
) -> tuple[Engine, asyncio.Task[PassReport]]:
    """A two-lane engine's send pass over `jobs` new jobs, once `backend`
    holds its `count` creates at the gate."""
    engine = Engine(
        ledgers[0],
        backend,
        DirectorySink(tmp_path / "out"),
        config=EngineConfig(concurrency=concurrency),
        owner="h|1|s",
        lane_ledgers=ledgers[1:],
    )
    await engine.submit([JobSpec(input=f"held {i}", model="m") for i in range(jobs)], send=False)
    task = asyncio.create_task(engine.send_reserved())
    await asyncio.wait_for(backend.waiting.wait(), WAIT)
    return engine, task


@pytest.mark.postgres
async def test_lanes_keep_their_leases_apart(tmp_path: Path, pg_dsn: str) -> None:
    """Two lanes of one process never work the same row: a lane's claim
    skips the rows the other lane holds, as another host's would."""
    clock = ManualClock()
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(2)]
    backend = Gated(clock, count=3)
    try:
        _, task = await _sends_held(tmp_path, ledgers, backend, concurrency=4, jobs=12)
        held = await ledgers[0].select("SELECT lease_owner FROM jobs WHERE inflight = 1")
        backend.gate.set()
        report = await asyncio.wait_for(task, WAIT)
    finally:
        for ledger in ledgers:
            await ledger.close()
    # The three creates waiting are three rows, each held by the lane sending
    # it: both lanes at work, neither on the other's rows.
    lane = lanes.lane_owner("h|1|s", 1)
    assert len(held) == 3 and {r[0] for r in held} == {"h|1|s", lane}, held
    assert report.counts["sent"] == 12
    assert max(backend.started.values()) == 1  # no create sent twice


# -- refused where they cannot help ------------------------------------------------------
def test_lanes_are_refused_on_sqlite(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a PostgreSQL ledger"):
        Settings(db=str(tmp_path / "l.db"), lanes=2).validate()
    Settings(db=str(tmp_path / "l.db"), lanes=1).validate()
    Settings(db="postgresql://u@h/db", lanes=2).validate()


def test_lanes_need_a_call_in_flight_each() -> None:
    with pytest.raises(ConfigError, match="needs at least 4 API calls in flight"):
        Settings(db="postgresql://u@h/db", lanes=4, concurrency=3).validate()
    Settings(db="postgresql://u@h/db", lanes=4, concurrency=4).validate()


def test_the_cli_refuses_lanes_on_sqlite_before_making_a_ledger(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    got = CliRunner().invoke(cli, ["tick", "--db", str(db), "--lanes", "2"])
    assert got.exit_code != 0
    assert "--lanes 2 needs a PostgreSQL ledger" in got.output
    assert not db.exists()
    got = CliRunner().invoke(cli, ["tick", "--db", str(db), "--lanes", "9"])
    assert got.exit_code == 2 and "--lanes" in got.output


# -- the fleet ---------------------------------------------------------------------------
def test_a_lane_owner_names_its_process_again() -> None:
    mine = str(this_process())
    for owner in (mine, "h|1|s", "h|1|s|space", "worker-a"):
        assert lane_owner(owner, 1) != owner
        assert lanes_process(lane_owner(owner, 2)) == owner
        assert lanes_process(owner) == owner
    assert lanes_process("h|1|123-tag|x") == "h|1|123-tag|x"  # other in-process tags stay


async def test_the_fleet_counts_a_lanes_leases_as_its_process(db_url: str) -> None:
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    try:
        mine = str(this_process())
        await ledger.insert_jobs(
            [(f"fleet-{i}", '{"input": "x", "model": "m"}', "m") for i in range(5)], "test"
        )
        await ledger.claim_sendable(mine, limit=2, lease_seconds=60)
        await ledger.claim_sendable(lane_owner(mine, 1), limit=3, lease_seconds=60)
        fleet = await read_fleet(ledger, clock.now())
    finally:
        await ledger.close()
    assert [(h.owner, h.held, h.alive) for h in fleet.holders] == [(mine, 5, True)]


def test_a_pace_below_the_lanes_still_gives_each_lane_a_call() -> None:
    got = [lanes.lane_config(EngineConfig(concurrency=1), 3, n).concurrency for n in range(3)]
    assert got == [1, 1, 1]


@pytest.mark.postgres
async def test_an_operator_acts_on_a_row_any_lane_of_its_process_holds(
    tmp_path: Path, pg_dsn: str
) -> None:
    """The console attached to a service acts as the engine's owner (lane
    0): a cancel of a row lane 1 is sending is taken as lane 0's would be."""
    clock = ManualClock()
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(2)]
    backend = Gated(clock, count=2, latency=None)
    try:
        engine, task = await _sends_held(tmp_path, ledgers, backend, concurrency=2, jobs=6)
        held = await ledgers[0].select("SELECT idem, lease_owner FROM jobs WHERE inflight = 1")
        console = engine.acting_as(Actor.CONSOLE)
        statuses = {
            owner: (await console.operator.cancel(idem, actor=Actor.CONSOLE)).status
            for idem, owner in held
        }
        backend.gate.set()
        await asyncio.wait_for(task, WAIT)
        # Another process's lane is not this operator's to take over.
        other = Engine(ledgers[0], FakeBackend(clock=clock), DirectorySink(tmp_path / "o2"),
                       owner="h|2|t")  # fmt: skip
        await other.submit([JobSpec(input="other's", model="m")], send=False)
        reserved = "SELECT idem FROM jobs WHERE status = 'reserving' AND inflight = 0"
        (key,) = [r[0] for r in await ledgers[0].select(reserved)]
        await ledgers[0].claim_sendable(
            lane_owner("h|2|t", 1), limit=1, lease_seconds=60, idems=[key]
        )
        with pytest.raises(OperatorError, match=re.escape("being worked on by h|2|t-lane1")):
            await console.operator.cancel(key, actor=Actor.CONSOLE)
    finally:
        for ledger in ledgers:
            await ledger.close()
    assert statuses == {"h|1|s": Status.CANCELLED, lane_owner("h|1|s", 1): Status.CANCELLED}


async def _creates_a_pass(tmp_path: Path, dsn: str, count: int) -> list[int]:
    """Creates a dead API (503, not created) is sent in each of 3 ticks."""
    clock = ManualClock()
    backend = FakeBackend(clock=clock, latency=0.0)
    backend.create_faults = [NotCreatedError("503", 503, retryable=True, cause="unavailable")] * 99
    ledgers = [await open_ledger(dsn, clock=clock) for _ in range(count)]
    try:
        engine = Engine(
            ledgers[0],
            backend,
            DirectorySink(tmp_path / f"out{count}"),
            config=EngineConfig(concurrency=6),
            owner=f"h|{count}|s",
            lane_ledgers=ledgers[1:],
        )
        jobs = [JobSpec(input=f"dead {count} {i}", model="m") for i in range(60)]
        await engine.submit(jobs, send=False)
        spent = []
        for _ in range(3):
            before = backend.calls["create"]
            await engine.tick()
            spent.append(backend.calls["create"] - before)
            clock.advance(5)
    finally:
        for ledger in ledgers:
            await ledger.close()
    return spent


@pytest.mark.postgres
@pytest.mark.parametrize("count", [2, 3])
async def test_a_dead_api_costs_lanes_the_probes_of_one(
    tmp_path: Path, pg_dsn: str, count: int
) -> None:
    """Lanes share one circuit breaker, and until the API has answered only
    the first lane calls: the threshold's calls, then one probe a pass."""
    assert await _creates_a_pass(tmp_path, pg_dsn, 1) == [5, 1, 1]
    assert await _creates_a_pass(tmp_path, pg_dsn, count) == [5, 1, 1]
