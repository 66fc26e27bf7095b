"""Custom (managed) agents (issue 24, point 3).

Since GA the API has an agents resource (google-genai's `client.agents.create /
get / list / delete`, `/{api_version}/agents[/{id}]`, the SDK's `Agent`
model); an interaction then names `agent=<the custom agent's id>`. Through the
real SDK against the emulator, and through the ledger: a job naming a custom
agent (from a jobs file) is sent, collected and delivered.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import _interactions as sdk_errors
from google.genai import types

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.jobsfile import parse_jobs
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer

BASE = "antigravity-preview-05-2026"
pytestmark = pytest.mark.filterwarnings("ignore:Agents usage is experimental")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def emu(clock: ManualClock) -> AsyncIterator[EmulatorServer]:
    async with EmulatorServer(EmulatorConfig(clock=clock.now, agent_time_scale=0.1)) as server:
        yield server


def _client(emu: EmulatorServer) -> Any:
    options = types.HttpOptions(
        base_url=emu.base_url, retry_options=types.HttpRetryOptions(attempts=1)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Agents usage is experimental"
        return genai.Client(api_key=emu.api_key, http_options=options).aio


async def test_agents_resource_create_get_list_delete(emu: EmulatorServer) -> None:
    aio = _client(emu)
    made = await aio.agents.create(
        id="triage-bot",
        base_agent=BASE,
        description="Sorts tickets.",
        system_instruction="Sort the ticket into bug, feature or question.",
    )
    assert made.id == "triage-bot" and made.base_agent == BASE
    assert made.system_instruction.startswith("Sort the ticket")
    other = await aio.agents.create(base_agent=BASE, description="no id chosen")
    assert other.id and other.id != "triage-bot"
    got = await aio.agents.get("triage-bot")
    assert got.description == "Sorts tickets."
    listed = await aio.agents.list()
    assert {a.id for a in listed.agents} == {"triage-bot", other.id}
    run = await aio.interactions.create(agent="triage-bot", input="The app crashes.")
    assert run.status == "completed" and run.agent == "triage-bot" and run.output_text
    await aio.agents.delete("triage-bot")
    with pytest.raises(sdk_errors.NotFoundError):
        await aio.agents.get("triage-bot")
    with pytest.raises(sdk_errors.BadRequestError, match="Unknown agent"):
        await aio.interactions.create(agent="triage-bot", input="again")
    await aio.aclose()


async def test_a_job_naming_a_custom_agent_runs_through_the_ledger(
    emu: EmulatorServer, clock: ManualClock, tmp_path: Path
) -> None:
    aio = _client(emu)
    await aio.agents.create(id="report-writer", base_agent=BASE, description="Writes reports.")
    await aio.aclose()
    (job,) = parse_jobs(
        ['{"agent": "report-writer", "input": "Write the weekly report."}'],
        source="jobs.jsonl",
        default_model="gemini-flash-latest",
    )
    assert job.agent == "report-writer" and job.model == ""
    backend = GeminiBackend(emu.api_key, emu.base_url)
    ledger = await open_ledger(str(tmp_path / "ledger.db"), clock=clock)
    engine = Engine(ledger, backend, DirectorySink(tmp_path / "out"), config=EngineConfig())
    try:
        await engine.tick([job])
        for _ in range(60):
            clock.advance(30)
            await engine.tick()
        idem = idempotency_key(job)
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.CONSUMED, row.last_error
        assert emu.store.interactions[row.handle or ""].request.agent == "report-writer"
        assert (tmp_path / "out" / f"{idem}.md").exists()
    finally:
        await ledger.close()
        await backend.aclose()
