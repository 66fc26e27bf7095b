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

import jsonschema
import pytest

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.emulator.catalog import KNOWN_MODELS
from reclaim_tui.emulator.structured import sample_value
from tests.contract.emulator_shapes import Recorder, recording
from tests.contract.test_emulator_fidelity import AGENT, FAST_AGENTS, Emu, sse_events

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


def test_the_fixtures_name_their_source() -> None:
    sources = json.loads((VERCEL / "SOURCES.json").read_text())
    assert sources["repository"] == "https://github.com/vercel/ai"
    kept = {p.name for p in VERCEL.iterdir() if p.name != "SOURCES.json"}
    assert kept == set(sources["files"])
    for entry in sources["files"].values():
        assert len(entry["commit"]) == 40 and entry["recorded"].startswith("2026-")


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


# -- 2. the create answer -------------------------------------------------------------------------
RECORDED_KEYS = set(answer("basic.json"))


def test_recorded_create_answers_all_have_the_same_keys() -> None:
    # The fixtures themselves: the keys the emulator is held to, whatever was sent.
    for name in (
        "basic.json",
        "structured-output.json",
        "google-search.json",
        "tool-call-step1.json",
        "multi-turn-stateful-turn2.json",
        "issue-17937-top-k.json",
    ):
        assert set(answer(name)) == RECORDED_KEYS, name
        assert answer(name)["service_tier"] == "standard"


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"generation_config": {"top_k": 3, "temperature": 0.2}},
        {"system_instruction": "You are a helpful assistant."},
        {"tools": [WEATHER]},
        {"tools": [{"type": "google_search"}]},
        {"response_format": [{"type": "text", "mime_type": "application/json", "schema": PERSON}]},
    ],
    ids=["plain", "generation_config", "system_instruction", "tools", "search", "response_format"],
)
async def test_a_create_answer_has_exactly_the_recorded_keys(
    emu: Emu, extra: dict[str, Any]
) -> None:
    status, body = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "How are you?", **extra}
    )
    assert status == 200, body
    assert set(body) == RECORDED_KEYS, sorted(set(body) ^ RECORDED_KEYS)
    assert body["service_tier"] == "standard"


async def test_a_create_with_store_false_answers_without_an_id(emu: Emu) -> None:
    recorded = answer("multi-turn-stateless-turn2.json")
    assert "id" not in recorded
    status, body = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "Hi", "store": False}
    )
    assert status == 200 and set(body) == set(recorded), body
    status, text = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "Hi", "store": False, "stream": True}
    )
    events = sse_events(text)
    assert events[0]["interaction"]["id"] == "" and events[1]["interaction_id"] == ""
    assert events[-1]["interaction"]["id"] == ""


async def test_a_follow_up_create_does_not_echo_previous_interaction_id(emu: Emu) -> None:
    first = await emu.aio.create(model=MODEL, input="Name a city.")
    status, body = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "And its landmark?", "previous_interaction_id": first.id},
    )
    assert status == 200 and set(body) == set(answer("multi-turn-stateful-turn2.json")), body


async def test_a_background_create_answer_names_its_tier_and_echoes_no_config(emu: Emu) -> None:
    sent = {"generation_config": {"temperature": 0.2}, "system_instruction": "Be brief."}
    status, body = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "hi", "background": True, **sent}
    )
    assert status == 200 and body["service_tier"] == "standard", body
    assert not set(sent) & set(body), body
    status, flex = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "hi", "background": True, "service_tier": "flex"},
    )
    assert flex["service_tier"] == "flex"


async def test_a_text_answer_usage_has_no_output_breakdown(emu: Emu) -> None:
    recorded = answer("basic.json")["usage"]
    status, body = await emu.raw("POST", "interactions", {"model": MODEL, "input": "How are you?"})
    assert status == 200 and set(body["usage"]) == set(recorded), body["usage"]
    # A non-text answer lists its own modality only (a recorded video answer).
    video = answer("video-response-format.json")["usage"]["output_tokens_by_modality"]
    assert [m["modality"] for m in video] == ["video"]
    status, image = await emu.raw(
        "POST",
        "interactions",
        {
            "model": "gemini-3.1-flash-image",
            "input": "A red square",
            "response_modalities": ["image"],
        },
    )
    breakdown = image["usage"]["output_tokens_by_modality"]
    assert [m["modality"] for m in breakdown] == ["image"], breakdown


async def test_a_search_answer_has_the_recorded_usage_and_result_fields(emu: Emu) -> None:
    recorded = answer("google-search.json")
    status, body = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "AI news", "tools": [{"type": "google_search"}]},
    )
    assert status == 200 and set(body["usage"]) == set(recorded["usage"]), body["usage"]
    want = {s["type"]: set(s) for s in recorded["steps"]}
    for step in body["steps"]:
        assert set(step) == want[step["type"]], step


async def test_a_json_schema_response_format_is_answered_with_valid_json(emu: Emu) -> None:
    recorded_text = answer("structured-output.json")["steps"][-1]["content"][0]["text"]
    jsonschema.validate(json.loads(recorded_text), PERSON)  # what the real API answered
    fmt = [{"type": "text", "mime_type": "application/json", "schema": PERSON}]
    texts = []
    for _ in range(2):
        done = await emu.aio.create(model=MODEL, input="Invent a person.", response_format=fmt)
        texts.append(done.output_text)
    jsonschema.validate(json.loads(texts[0]), PERSON)
    assert texts[0] == texts[1]  # deterministic


async def test_a_bare_schema_response_format_is_honoured(emu: Emu) -> None:
    # The JS SDK's interactions_structured_output_json sample sends the schema itself.
    schema = {"type": "array", "description": "A list of colors"}
    status, body = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "Which are the colors of a rainbow", "response_format": schema},
    )
    assert status == 200, body
    jsonschema.validate(json.loads(body["steps"][-1]["content"][0]["text"]), schema)


SCHEMAS = [
    {"type": "string", "enum": ["red", "green"]},
    {"type": "integer", "minimum": 5, "maximum": 9},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "string", "minLength": 40, "maxLength": 45},
    {"type": "string", "format": "date"},
    {"type": ["null", "boolean"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}]},
    {"anyOf": [{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]}]},
    {"allOf": [{"properties": {"x": {"type": "integer"}}, "required": ["x"]}], "type": "object"},
    {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    },
    {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"$ref": "#/definitions/tag"}}},
        "definitions": {"tag": {"type": "string", "maxLength": 3}},
        "required": ["tags"],
        "additionalProperties": False,
    },
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(n) for n in range(len(SCHEMAS))])
def test_a_sample_value_is_valid_against_its_schema(schema: dict[str, Any]) -> None:
    value = sample_value(schema, hint="the prompt's words")
    jsonschema.validate(value, schema)
    assert sample_value(schema, hint="the prompt's words") == value


@pytest.mark.parametrize(
    "schema",
    [
        {  # endless nesting required: no finite value is valid
            "$defs": {
                "n": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/$defs/n"}},
                    "required": ["next"],
                }
            },
            "$ref": "#/$defs/n",
        },
        {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
        {"type": "array", "minItems": 10**9},
        {"type": "string", "minLength": 10**9},
        {"allOf": [5, None, {"$ref": "#/nowhere"}, {"properties": 5, "required": 5}]},
        {"type": "array", "items": 5, "prefixItems": 5, "required": "x"},
    ],
    ids=["endless", "self-anyof", "huge-array", "huge-string", "garbage-allof", "garbage"],
)
async def test_a_hostile_schema_gets_a_small_json_answer(emu: Emu, schema: dict[str, Any]) -> None:
    fmt = [{"type": "text", "mime_type": "application/json", "schema": schema}]
    status, body = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "x", "response_format": fmt}
    )
    assert status == 200, body
    text = body["steps"][-1]["content"][0]["text"]
    json.loads(text)
    assert len(text) < 10_000


# -- 3. the stream's envelope ---------------------------------------------------------------------
def kinds_of(events: list[dict[str, Any]]) -> list[str]:
    """Event types with each run of equal step deltas folded into one."""
    out: list[str] = []
    for event in events:
        kind = event["event_type"]
        if kind == "step.delta":
            kind = f"step.delta:{event['delta']['type']}"
        if not out or out[-1] != kind or not kind.startswith("step.delta"):
            out.append(kind)
    return out


async def test_a_streamed_text_turn_has_the_recorded_envelope(emu: Emu) -> None:
    recorded = chunks("basic.chunks.txt")
    status, text = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "How are you?", "stream": True}
    )
    assert status == 200
    events = sse_events(text)
    assert kinds_of(events) == kinds_of(recorded)
    assert set(events[0]["interaction"]) == set(recorded[0]["interaction"])
    assert events[1] == {**recorded[1], "interaction_id": events[0]["interaction"]["id"]} | {
        "event_id": events[1]["event_id"]
    }
    assert set(events[-1]["interaction"]) == set(recorded[-1]["interaction"])


# -- 4. tool steps stream as deltas ---------------------------------------------------------------
def tool_events(events: list[dict[str, Any]], kind: str) -> tuple[dict[str, Any], list[Any]]:
    start = next(e for e in events if e["event_type"] == "step.start" and e["step"]["type"] == kind)
    deltas = [
        e["delta"]
        for e in events
        if e["event_type"] == "step.delta" and e["index"] == start["index"]
    ]
    return start["step"], deltas


async def test_google_search_steps_stream_as_the_recording_does(emu: Emu) -> None:
    recorded = chunks("google-search.chunks.txt")
    status, text = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "AI news", "tools": [{"type": "google_search"}], "stream": True},
    )
    assert status == 200
    events = sse_events(text)
    stored = {
        s["type"]: s
        for s in (await emu.raw("GET", f"interactions/{events[0]['interaction']['id']}"))[1][
            "steps"
        ]
    }
    for kind, payload in (("google_search_call", "arguments"), ("google_search_result", "result")):
        want_head, want_deltas = tool_events(recorded, kind)
        head, deltas = tool_events(events, kind)
        assert set(head) == set(want_head) and head["signature"] == "", head
        assert [set(d) for d in deltas] == [set(d) for d in want_deltas], deltas
        assert deltas[0]["type"] == kind and deltas[0][payload] == stored[kind][payload]


async def test_a_function_call_starts_as_the_recording_does(emu: Emu) -> None:
    recorded = chunks("tool-call-step1.chunks.txt")
    _, text = await emu.raw(
        "POST",
        "interactions",
        {"model": MODEL, "input": "Weather in Paris?", "tools": [WEATHER], "stream": True},
    )
    events = sse_events(text)
    want_head, want_deltas = tool_events(recorded, "function_call")
    head, deltas = tool_events(events, "function_call")
    assert set(head) == set(want_head) and head["arguments"] == {} and head["signature"] == ""
    assert {d["type"] for d in deltas} == {d["type"] for d in want_deltas} == {"arguments_delta"}


async def test_url_context_steps_stream_as_deltas_too(emu: Emu) -> None:
    # No recording streams url_context: it follows the google_search recording,
    # with the SDK's URLContextCallDelta / URLContextResultDelta.
    created = await emu.aio.create(agent=AGENT, input="History of TPUs", background=True)
    _, text = await emu.raw("GET", f"interactions/{created.id}?stream=true")
    events = sse_events(text)
    for kind, payload, key in (
        ("url_context_call", "arguments", "id"),
        ("url_context_result", "result", "call_id"),
    ):
        head, deltas = tool_events(events, kind)
        assert set(head) == {key, "signature", "type"}, head
        assert [d["type"] for d in deltas] == [kind] and deltas[0][payload], deltas


# -- 5. a completed Deep Research GET --------------------------------------------------------------
async def test_a_completed_deep_research_get_holds_input_and_report_only(emu: Emu) -> None:
    fact = json.loads((RECORDED / "issue24_real_answers.json").read_text())["deep_research_run"]
    created = await emu.aio.create(agent=AGENT, input="History of TPUs", background=True)
    done = await emu.finished(created.id)
    assert done.status == "completed"
    _, body = await emu.raw("GET", f"interactions/{created.id}")
    assert [s["type"] for s in body["steps"]] == fact["completed_step_types"]
    assert body["created"] == body["updated"]
    assert done.output_text and done.output_text == body["steps"][-1]["content"][0]["text"]
