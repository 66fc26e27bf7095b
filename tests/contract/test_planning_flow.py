"""Collaborative planning, end to end through the real SDK (issue 24, point 1).

With `agent_config={"type": "deep-research", "collaborative_planning": True}`
the real agent *completes* the interaction with a research plan; the user
approves or refines it in the next turn (`previous_interaction_id`), sent
with `collaborative_planning` false to run the research, true to get a new
plan. Sources: the SDK's `DeepResearchAgentConfig` docstring ("the Deep
Research agent will provide a research plan in its response. The agent will
then proceed only if the user confirms the plan in the next turn"); the
cookbook's Get_started_Deep_Research notebook, which polls the plan until
`completed`; agno's deep_research_collaborative_planning example (plan:
true, refine: true, execute: false).

In the ledger a planning job stops as "plan ready" (held, its plan stored
and shown), `answer` sends the follow-up turn, and only the final report
reaches the sink, once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.retention import attention
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.errors import OperatorError

AGENT = "deep-research-preview-04-2026"
PLANNING = {"type": "deep-research", "collaborative_planning": True}
SPEC = JobSpec(
    input="Do some research on Google TPUs.",
    model="",
    agent=AGENT,
    config={"agent_config": PLANNING},
)
IDEM = idempotency_key(SPEC)


@dataclass
class World:
    clock: ManualClock
    ledger: Ledger
    engine: Engine
    store: InteractionStore
    out: Path

    async def run_for(self, seconds: float, step: float = 30.0) -> None:
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            self.clock.advance(step)
            await self.engine.tick()


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    clock = ManualClock()
    config = EmulatorConfig(clock=clock.now, agent_time_scale=0.1)
    async with EmulatorServer(config) as emu:
        backend = GeminiBackend(emu.api_key, emu.base_url)
        ledger = await open_ledger(str(tmp_path / "ledger.db"), clock=clock)
        out = tmp_path / "out"
        engine = Engine(ledger, backend, DirectorySink(out), config=EngineConfig())
        try:
            yield World(clock, ledger, engine, emu.store, out)
        finally:
            await ledger.close()
            await backend.aclose()


async def test_a_planning_job_stops_as_plan_ready_then_answers_run_the_research(
    world: World,
) -> None:
    await world.engine.tick([SPEC])
    await world.run_for(600)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.handle is not None
    plan_id = row.handle
    # The emulator completed the plan, as the real agent does.
    assert world.store.interactions[plan_id].status == "completed"
    # The ledger: plan ready, held for an operator, nothing delivered.
    assert row.status == Status.SUBMITTED and row.held
    assert (row.last_error or "").startswith(PLAN_READY) and "plan" in row.last_error.lower()
    stored = await world.ledger.result(IDEM)
    assert stored is not None and stored.interaction_id == plan_id
    assert not world.out.exists() or not list(world.out.glob("*.md"))
    assert (await attention(world.ledger, 55.0)).plans_ready == 1

    # Refine: a new plan, chained to the first.
    row = await world.engine.operator.answer(IDEM, "Focus on v5.", actor=Actor.CLI, refine=True)
    refined_id = row.handle
    assert refined_id not in (None, plan_id)
    refined = world.store.interactions[refined_id or ""]
    assert refined.request.previous_interaction_id == plan_id
    assert refined.request.agent_config.get("collaborative_planning") is True
    await world.run_for(600)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.held and (row.last_error or "").startswith(PLAN_READY)

    # Approve: the research runs; its report alone is delivered, once.
    row = await world.engine.operator.answer(IDEM, "Looks good, go ahead.", actor=Actor.CLI)
    run_id = row.handle
    run = world.store.interactions[run_id or ""]
    assert run.request.previous_interaction_id == refined_id
    assert run.request.agent_config.get("collaborative_planning") is False
    await world.run_for(3600, step=120.0)
    row = await world.ledger.get(IDEM)
    assert row is not None and row.status == Status.CONSUMED and not row.held
    stored = await world.ledger.result(IDEM)
    assert stored is not None and stored.interaction_id == run_id
    assert "Research plan" not in stored.output_text and "TPUs" in stored.output_text
    files = sorted(p.name for p in world.out.iterdir() if not p.name.startswith("."))
    assert files == [f"{IDEM}.json", f"{IDEM}.md"]
    assert "Research plan" not in (world.out / f"{IDEM}.md").read_text()
    notes = [e.note for e in await world.ledger.events(IDEM)]
    assert sum("plan ready" in n for n in notes) == 2
    assert any(plan_id in n and refined_id in n for n in notes if "answered" in n)
    assert any(refined_id in n and run_id in n for n in notes if "answered" in n)
    assert sum(n == "sink delivered" for n in notes) == 1
    with pytest.raises(OperatorError, match="not waiting for an answer"):
        await world.engine.operator.answer(IDEM, "again", actor=Actor.CLI)
