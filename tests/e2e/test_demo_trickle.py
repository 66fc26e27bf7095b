"""The demo keeps producing jobs: a seeded trickle of models and Deep Research
agents, submitted through the engine while the demo's world (emulator,
inbox, engine) runs. Its intervals go through an injected sleep that the
test releases one at a time: no wall clock is asserted."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.costs import cost_of, load_prices
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, JobSpec, OrphanPolicy, Status
from reclaim_tui.demo import DEMO_MODELS
from reclaim_tui.demo.world import (
    TRICKLE_AGENTS,
    TRICKLE_MODELS,
    Trickle,
    open_demo_engine,
)
from reclaim_tui.errors import LedgerBusyError

LIMIT = 60.0  # seconds a step may take on a loaded machine before the test gives up


class Gate:
    """An injected sleep: records each interval asked for and returns once the
    test lets one through."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.tickets = asyncio.Semaphore(0)

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        await self.tickets.acquire()

    def release(self, count: int) -> None:
        for _ in range(count):
            self.tickets.release()


async def _no_wait(_: float) -> None:
    await asyncio.sleep(0)


async def test_the_trickle_mixes_models_and_agents_at_seeded_intervals() -> None:
    waits: list[float] = []
    got: list[JobSpec] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def submit(jobs: list[JobSpec]) -> None:
        got.extend(jobs)

    trickle = Trickle(submit, seed=7, sleep=sleep, tag="t0")
    for _ in range(80):
        await trickle.step()
    assert len(got) == 80 and all(3.0 <= w <= 8.0 for w in waits)
    assert len({j.input for j in got}) == 80  # every job a new key
    targets = Counter(j.target for j in got)
    assert set(TRICKLE_AGENTS) & set(targets)
    assert len(set(TRICKLE_MODELS) & set(targets)) >= 2
    agents = [j for j in got if j.agent]
    assert all(j.model == "" for j in agents)
    assert any(j.config.get("agent_config", {}).get("collaborative_planning") for j in agents)
    again: list[JobSpec] = []

    async def collect(jobs: list[JobSpec]) -> None:
        again.extend(jobs)

    replay = Trickle(collect, seed=7, sleep=_no_wait, tag="t0")
    for _ in range(80):
        await replay.step()
    assert again == got  # seeded


async def test_a_refused_submit_does_not_stop_the_trickle() -> None:
    calls = 0

    async def submit(jobs: list[JobSpec]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise LedgerBusyError("busy")
        if calls == 3:
            raise asyncio.CancelledError

    trickle = Trickle(submit, seed=1, sleep=_no_wait, tag="t1")
    try:
        await trickle.run()
    except asyncio.CancelledError:
        pass
    assert calls == 3


async def _live_rows(ledger: Ledger) -> list[tuple[str, str, str]]:
    rows = await ledger.select("SELECT spec, model, status FROM jobs")
    return [tuple(r) for r in rows if "(live #" in json.loads(r[0])["input"]]


async def _until(predicate: Callable[[], Awaitable[bool]], limit: float = LIMIT) -> bool:
    """Wait for `predicate` (a limit for a stuck run, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while loop.time() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_new_jobs_keep_arriving_in_the_demo_world(tmp_path: Path) -> None:
    settings = Settings(
        db=str(tmp_path / "demo.db"),
        out=str(tmp_path / "articles"),
        model=DEMO_MODELS[0],
        orphan_policy=OrphanPolicy.HOLD,
        emulator_lookup=False,
        actor=Actor.CONSOLE,
    )
    gate = Gate()
    async with open_demo_engine(
        settings, actor=Actor.CONSOLE, jobs=4, seed=7, latency=(0.2, 0.5), sleep=gate.sleep
    ) as engine:
        ledger = engine.ledger
        assert await _until(lambda: _count_is(ledger, 4))
        assert await _live_rows(ledger) == []  # nothing before the first interval ran out
        for released in (5, 12, 20):
            gate.release(released - len(await _live_rows(ledger)))

            async def arrived(n: int = released) -> bool:
                return len(await _live_rows(ledger)) == n

            assert await _until(arrived), f"the trickle stopped before {released} jobs"
        live = await _live_rows(ledger)
        assert any(model in TRICKLE_AGENTS for _, model, _ in live), live
        assert len(gate.asked) >= 20 and all(3.0 <= w <= 8.0 for w in gate.asked)

        # Reserved, then sent by the engine's passes (the console's loop in
        # the demo; models run 0.2–0.5 s here).
        async def finished() -> bool:
            await engine.tick()
            statuses = Counter(s for _, m, s in await _live_rows(ledger) if m not in TRICKLE_AGENTS)
            return statuses[Status.CONSUMED.value] + statuses[Status.DONE.value] >= 5

        assert await _until(finished)
        agent_states = {s for _, m, s in await _live_rows(ledger) if m in TRICKLE_AGENTS}
        # Deep Research runs for minutes: still under way.
        assert agent_states & {Status.SUBMITTED.value, Status.RESERVING.value}
        # The emulator's usage is scaled so that a model job costs what a real one
        # might: a tenth of a cent to a few cents, not a millionth of a dollar.
        prices = load_prices(None, environ={})
        paid = await ledger.select(
            "SELECT j.model, r.usage FROM jobs AS j JOIN results AS r ON r.job = j.id"
            " WHERE j.status = 'consumed'"
        )
        costs = [cost_of(json.loads(usage), model, prices) for model, usage in paid]
        assert costs and all(c is not None and 0.0005 < c < 0.2 for c in costs), costs


async def _count_is(ledger: Ledger, n: int) -> bool:
    rows = await ledger.select("SELECT COUNT(*) FROM jobs")
    return int(rows[0][0]) == n
