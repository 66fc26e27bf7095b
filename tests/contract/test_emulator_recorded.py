"""The emulator against answers the real API was recorded or documented to send
(issue 24, points 2 and 4–8), through the real SDK where it can send the
request, raw HTTP where it cannot. The facts and their sources are in
recorded/issue24_real_answers.json.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator.catalog import KNOWN_MODELS
from tests.contract.emulator_shapes import Recorder, recording
from tests.contract.test_emulator_fidelity import AGENT, FAST_AGENTS, MODEL, Emu, sse_events

__all__ = ["recording"]  # the fixture, imported for pytest

RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).parent / "recorded" / "issue24_real_answers.json").read_text()
)


@pytest.fixture
async def emu(recording: Recorder) -> AsyncIterator[Emu]:
    # The emulator's defaults (no queued_share set): what a user gets.
    config = EmulatorConfig(latency=0.05, agent_time_scale=FAST_AGENTS, models=KNOWN_MODELS)
    server = EmulatorServer(config)
    server.app.middlewares.append(recording.middleware)
    async with server:
        emu = Emu(server, recording)
        yield emu
        await emu.client.aio.aclose()
    recording.check_all()  # every Interactions answer fits the SDK's models


async def test_upper_case_response_modalities_are_accepted(emu: Emu) -> None:
    fact = RECORDED["response_modalities_upper_case"]
    assert fact["refused"] is False
    done = await emu.aio.create(
        model="gemini-3.1-flash-image", input="A red square", **fact["request"]
    )
    assert done.status == "completed" and done.output_image is not None
    status, body = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "x", "response_modalities": ["TEXT"]}
    )
    assert status == 200 and body["status"] == "completed", body


async def test_antigravity_remote_environment_gets_an_environment_id(emu: Emu) -> None:
    fact = RECORDED["antigravity_remote_environment"]
    created = await emu.aio.create(input="List the files.", **fact["request"])
    got = await emu.aio.get(created.id)
    for interaction in (created, got):
        assert interaction.environment_id, interaction
    assert created.environment_id == got.environment_id
    plain = await emu.aio.create(model=MODEL, input="x")
    assert plain.environment_id is None  # only with an environment in the request


async def test_a_webhook_created_with_a_chosen_id_keeps_it(emu: Emu) -> None:
    fact = RECORDED["webhook_chosen_id"]
    chosen = fact["query"]["webhook_id"]
    body = {
        "name": "batches",
        "uri": "https://hooks.example.com/batch",
        "subscribed_events": ["batch.succeeded"],
    }
    status, made = await emu.raw("POST", f"webhooks?webhook_id={chosen}", body)
    assert status == 200 and made["id"] == fact["answer"]["id"], made
    got = await emu.client.aio.webhooks.get(id=chosen)
    assert got.id == chosen
    status, again = await emu.raw("POST", f"webhooks?webhook_id={chosen}", body)
    assert status == 409, again  # AIP-133: a second create of the same id


async def test_deep_research_run_follows_the_recording(emu: Emu) -> None:
    fact = RECORDED["deep_research_run"]
    created = await emu.aio.create(agent=AGENT, input="History of TPUs", background=True)
    assert created.status == fact["create_status"]
    statuses, running_steps = [], []
    done = None
    for _ in range(400):
        got = await emu.aio.get(created.id)
        statuses.append(got.status)
        if got.status == "completed":
            done = got
            break
        running_steps.append([s.type for s in got.steps or ()])
        await asyncio.sleep(0.01)
    assert done is not None
    assert set(statuses) <= set(fact["poll_statuses"]), statuses
    # While it ran, GET showed no step of the run (the turn's own input aside).
    assert all(kinds in ([], ["user_input"]) for kinds in running_steps), running_steps
    kinds = [s.type for s in done.steps]
    assert set(fact["completed_step_types"]) <= set(kinds) and kinds[0] == "user_input"
    usage = done.usage.model_dump()
    for name in fact["usage_absent"] + fact["usage_null"]:
        assert usage.get(name) is None, name
    assert done.usage.total_tokens == (
        done.usage.total_input_tokens
        + done.usage.total_output_tokens
        + done.usage.total_thought_tokens
        + done.usage.total_tool_use_tokens
    )


async def test_queued_is_a_fault_option(emu: Emu) -> None:
    emu.server.store.faults.queued_share = 0.5
    created = await emu.aio.create(agent=AGENT, input="History of TPUs", background=True)
    assert created.status == "queued"


async def test_a_streamed_text_turn_follows_the_recording(emu: Emu) -> None:
    fact = RECORDED["streamed_text_turn"]
    status, text = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "Count to five.", "stream": True}
    )
    assert status == 200
    events = sse_events(text)
    assert events[0]["event_type"] == "interaction.created"
    assert events[0]["interaction"]["status"] == fact["created_event_status"]
    completed = events[-1]
    assert completed["event_type"] == "interaction.completed"
    for name, value in fact["completed_event_interaction"].items():
        assert completed["interaction"][name] == value, name
    usage = completed["interaction"]["usage"]
    for name in fact["usage_absent"]:
        assert name not in usage, name
