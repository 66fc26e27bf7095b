"""The emulator against answers recorded from the real API in 2026, kept as fixtures
by the Vercel AI SDK's Google provider (recorded/vercel_ai/, sources in its
SOURCES.json), and against one recorded refusal (recorded/function_result_refusal.json):
stateless function calling, the create answer's exact keys, structured output,
the stream's envelope and how tool steps stream, and a completed Deep
Research GET (recorded/issue24_real_answers.json).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator.catalog import KNOWN_MODELS
from tests.contract.emulator_shapes import Recorder, recording
from tests.contract.test_emulator_fidelity import FAST_AGENTS, Emu

__all__ = ["recording"]  # the fixture, imported for pytest

RECORDED = Path(__file__).parent / "recorded"
VERCEL = RECORDED / "vercel_ai"
#: The model of the recordings.
MODEL = "gemini-2.5-flash"
WEATHER = {
    "type": "function",
    "name": "getWeather",
    "description": "Get the weather in a location",
    "parameters": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}
#: The schema the Vercel provider's structured-output test sends.
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Full name of the person."},
        "age": {"type": "number", "description": "Age of the person in years."},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}


def answer(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((VERCEL / name).read_text())
    return body


def chunks(name: str) -> list[dict[str, Any]]:
    lines = (VERCEL / name).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
async def emu(recording: Recorder) -> AsyncIterator[Emu]:
    config = EmulatorConfig(latency=0.05, agent_time_scale=FAST_AGENTS, models=KNOWN_MODELS)
    server = EmulatorServer(config)
    server.app.middlewares.append(recording.middleware)
    async with server:
        emu = Emu(server, recording)
        yield emu
        await emu.client.aio.aclose()
    recording.check_all()


# -- 1. stateless function calling ----------------------------------------------------------------
async def test_a_call_answered_in_the_same_input_is_accepted(emu: Emu) -> None:
    question = {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    asked = await emu.aio.create(model=MODEL, input=[question], tools=[WEATHER])
    assert asked.status == "requires_action"
    history = [question, *(s.model_dump(mode="json", exclude_none=True) for s in asked.steps)]
    call = history[-1]
    assert [s["type"] for s in history] == ["user_input", "thought", "function_call"]
    result = {"type": "function_result", "name": call["name"], "call_id": call["id"]}
    history.append({**result, "result": "sunny, 21 C"})
    for store in (True, False):
        # No previous_interaction_id: the whole history is the input.
        done = await emu.aio.create(model=MODEL, input=history, tools=[WEATHER], store=store)
        assert done.status == "completed", done
        assert "getWeather returned sunny, 21 C" in done.output_text


async def test_only_the_recorded_refusal_of_a_function_result_is_kept(emu: Emu) -> None:
    refusal = json.loads((RECORDED / "function_result_refusal.json").read_text())
    asked = await emu.aio.create(model=MODEL, input="Weather in Paris?", tools=[WEATHER])
    call = next(s for s in asked.steps if s.type == "function_call")
    nameless = {"type": "function_result", "call_id": call.id, "result": "sunny"}
    status, body = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "previous_interaction_id": asked.id, "input": [nameless]},
    )
    assert status == refusal["status"] and body["error"]["message"] == refusal["message"], body
    named = {**nameless, "name": call.name}
    done = await emu.aio.create(model=MODEL, previous_interaction_id=asked.id, input=[named])
    assert done.status == "completed"
