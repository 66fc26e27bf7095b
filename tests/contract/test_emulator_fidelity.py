"""The emulator against google-genai's own types: every answer and every SSE event
it sends in these scenarios is validated (emulator_shapes.py), and each feature
is driven through the real SDK (`client.aio.interactions`) or, where the SDK
refuses to send a request, raw HTTP.
"""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from google import genai
from google.genai import _interactions as sdk_errors
from google.genai import types
from google.genai._gaos.types import interactions as sdk

from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.emulator.catalog import AGENTS, CREATE_FIELDS, KNOWN_MODELS
from reclaim_tui.emulator.interaction import NOT_ECHOED_BY_CREATE
from tests.contract.emulator_shapes import Recorder, check_event, recording

__all__ = ["recording"]  # the fixture, imported for pytest

MODEL = "gemini-3-flash-preview"
EVENT_TYPES = (
    sdk.InteractionCreatedEvent,
    sdk.InteractionStatusUpdate,
    sdk.StepStart,
    sdk.StepDelta,
    sdk.StepStop,
    sdk.ErrorEvent,
    sdk.InteractionCompletedEvent,
)
AGENT = "deep-research-preview-04-2026"
#: Deep Research's minutes, scaled to about half a second.
FAST_AGENTS = 0.002


class Emu:
    """An emulator on loopback, the real SDK's async client on it, and a recorder."""

    def __init__(self, server: EmulatorServer, recorder: Recorder) -> None:
        self.server = server
        self.recorder = recorder
        options = types.HttpOptions(
            base_url=server.base_url, retry_options=types.HttpRetryOptions(attempts=1)
        )
        self.client = genai.Client(api_key=server.api_key, http_options=options)
        self.aio: Any = self.client.aio.interactions

    async def raw(
        self, method: str, path: str, body: Any = None, key: str | None = "default"
    ) -> tuple[int, Any]:
        headers = {"x-goog-api-key": self.server.api_key or ""} if key == "default" else {}
        if key not in (None, "default"):
            headers = {"x-goog-api-key": key}
        async with aiohttp.ClientSession() as session:
            url = f"{self.server.base_url}/v1beta/{path}"
            async with session.request(method, url, json=body, headers=headers) as response:
                text = await response.text()
                if response.content_type == "text/event-stream":
                    return response.status, text
                return response.status, json.loads(text)

    async def until(self, handle: str, done: Callable[[Any], bool]) -> Any:
        for _ in range(400):
            got = await self.aio.get(handle)
            if done(got):
                return got
            await asyncio.sleep(0.02)
        raise AssertionError(f"{handle} never reached the wanted state: {got.status}")

    async def finished(self, handle: str) -> Any:
        return await self.until(handle, lambda i: i.status not in ("queued", "in_progress"))


@pytest.fixture
def emu_config() -> EmulatorConfig:
    return EmulatorConfig(
        latency=0.05, agent_time_scale=FAST_AGENTS, full_steps=True, models=KNOWN_MODELS
    )


@pytest.fixture
async def emu(emu_config: EmulatorConfig, recording: Recorder) -> AsyncIterator[Emu]:
    server = EmulatorServer(emu_config)
    server.app.middlewares.append(recording.middleware)
    async with server:
        emu = Emu(server, recording)
        yield emu
        await emu.client.aio.aclose()
    checked = recording.check_all()
    assert checked > 0


def sse_events(text: str) -> list[dict[str, Any]]:
    """The JSON events of a raw SSE body (ending with the [DONE] sentinel)."""
    frames = [f for f in text.split("\n\n") if f.strip()]
    assert frames[-1] == "data: [DONE]", frames[-1]
    events = []
    for block in frames[:-1]:
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        event = json.loads(lines["data"])
        assert lines["event"] == event["event_type"]
        events.append(event)
    return events


def steps_from_events(events: list[Any]) -> list[dict[str, Any]]:
    """The output steps a client rebuilds from step.start / step.delta events."""
    steps: dict[int, dict[str, Any]] = {}
    arguments: dict[int, str] = {}
    for event in events:
        if event.event_type == "step.start":
            steps[event.index] = event.step.model_dump(mode="json", exclude_none=True)
        elif event.event_type == "step.delta":
            step, delta = steps[event.index], event.delta.model_dump(mode="json", exclude_none=True)
            kind = delta.pop("type")
            if kind == "text":
                blocks = step.setdefault("content", [])
                if blocks and blocks[-1]["type"] == "text":
                    blocks[-1]["text"] += delta["text"]
                else:
                    blocks.append({"type": "text", "text": delta["text"]})
            elif kind == "text_annotation_delta":
                step["content"][-1]["annotations"] = delta["annotations"]
            elif kind == "thought_signature":
                step["signature"] = delta["signature"]
            elif kind == "thought_summary":
                step.setdefault("summary", []).append(delta["content"])
            elif kind == "arguments_delta":
                arguments[event.index] = arguments.get(event.index, "") + delta["arguments"]
            elif kind == step["type"]:  # a tool step's arguments or result
                step.update(delta)
            else:
                step.setdefault("content", []).append({"type": kind, **delta})
    for index, text in arguments.items():
        steps[index]["arguments"] = json.loads(text)
    for step in steps.values():
        if step.get("signature") == "":  # a tool step's start: no signature
            del step["signature"]
    return [steps[i] for i in sorted(steps)]


def dumped(interaction: Any) -> list[dict[str, Any]]:
    return [
        s.model_dump(mode="json", exclude_none=True)
        for s in interaction.steps or ()
        if s.type != "user_input"
    ]


# -- what the emulator knows by name is what the SDK knows ----------------------------------------
def _literals(alias: Any) -> set[str]:
    for arm in typing.get_args(alias):
        if typing.get_origin(arm) is typing.Literal:
            return set(typing.get_args(arm))
    raise AssertionError(f"no Literal in {alias}")


def test_catalog_matches_the_installed_sdk() -> None:
    # Every model the installed SDK names is known (the catalog is the union
    # over the verified SDK versions, so an older SDK may list fewer).
    assert _literals(sdk.Model) <= KNOWN_MODELS
    assert _literals(sdk.AgentOption) == set(AGENTS)
    fields = set(sdk.CreateModelInteraction.model_fields) | set(
        sdk.CreateAgentInteraction.model_fields
    )
    assert fields == CREATE_FIELDS


# -- plain model jobs: background, foreground, statuses on their own ------------------------------
async def test_background_job_goes_queued_in_progress_completed(emu: Emu) -> None:
    emu.server.store.faults.queued_share = 0.1  # `queued` is a fault option (issue 24.6)
    created = await emu.aio.create(
        model=MODEL, input="Summarise the Q3 report", background=True, labels={"team": "a"}
    )
    assert created.status == "queued" and created.model == MODEL and created.agent is None
    seen = {created.status}
    done = await emu.until(created.id, lambda i: seen.add(i.status) or i.status == "completed")
    assert seen >= {"queued", "completed"}
    assert [s.type for s in done.steps] == ["user_input", "thought", "model_output"]
    assert done.output_text and done.labels == {"team": "a"}
    usage = done.usage
    assert usage.total_tokens == (
        usage.total_input_tokens
        + usage.total_output_tokens
        + usage.total_thought_tokens
        + usage.total_tool_use_tokens
    )


async def test_foreground_create_answers_the_result_with_output_steps_only(emu: Emu) -> None:
    done = await emu.aio.create(model=MODEL, input="Tell me a joke.")
    assert done.status == "completed"
    assert [s.type for s in done.steps] == ["thought", "model_output"]
    again = await emu.aio.get(done.id)
    assert [s.type for s in again.steps] == ["user_input", "thought", "model_output"]
    assert again.output_text == done.output_text


async def test_request_fields_are_echoed(emu: Emu) -> None:
    sent: dict[str, Any] = {
        "system_instruction": "Answer briefly.",
        "generation_config": {"temperature": 0.2, "thinking_level": "low"},
        "webhook_config": {"uris": ["https://hooks.example.com/x"], "user_metadata": {"job": 7}},
        "service_tier": "flex",
        "response_modalities": ["text"],
    }
    created = await emu.aio.create(model=MODEL, input="hi", background=True, **sent)
    got = await emu.aio.get(created.id)
    for interaction in (created, got):
        body = interaction.model_dump(mode="json", exclude_none=True)
        for name, value in sent.items():
            # The create's answer leaves some out, as recorded real answers do
            # (test_emulator_vercel_recorded.py).
            if interaction is got or name not in NOT_ECHOED_BY_CREATE:
                assert body[name] == value, name
            else:
                assert name not in body, name


async def test_include_input_returns_the_input(emu: Emu) -> None:
    created = await emu.aio.create(model=MODEL, input="echo me", background=True)
    assert (await emu.aio.get(created.id)).input is None
    assert (await emu.aio.get(created.id, include_input=True)).input == "echo me"


# -- streaming ------------------------------------------------------------------------------------
async def test_streamed_create_yields_typed_events_that_rebuild_the_steps(emu: Emu) -> None:
    stream = await emu.aio.create(model=MODEL, input="Count from 1 to 25.", stream=True)
    events = [event async for event in stream]
    kinds = [e.event_type for e in events]
    assert kinds[:2] == ["interaction.created", "interaction.status_update"]
    # One status update only, as a recorded real stream has (recorded/vercel_ai/).
    assert kinds[-2:] == ["step.stop", "interaction.completed"]
    assert kinds.count("interaction.status_update") == 1
    assert {"step.start", "step.delta", "step.stop"} <= set(kinds)
    assert all(isinstance(e, EVENT_TYPES) for e in events)
    final = events[-1].interaction
    assert final.status == "completed" and final.usage.total_output_tokens > 0
    stored = await emu.aio.get(final.id)
    assert steps_from_events(events) == dumped(stored)


async def test_get_stream_resumes_after_last_event_id(emu: Emu) -> None:
    created = await emu.aio.create(agent=AGENT, input="History of TPUs", background=True)
    first: list[Any] = []
    stream = await emu.aio.get(created.id, stream=True)
    async for event in stream:
        first.append(event)
        if len(first) == 5:
            break
    await stream.close()
    rest = [
        e
        async for e in await emu.aio.get(created.id, stream=True, last_event_id=first[-1].event_id)
    ]
    events = first + rest
    assert [e.event_id for e in events] == [f"evt_{n}" for n in range(len(events))]
    assert events[-1].event_type == "interaction.completed"
    # A completed Deep Research GET holds the report only (a recorded real run).
    assert steps_from_events(events)[-1:] == dumped(await emu.aio.get(created.id))
    replay = [e async for e in await emu.aio.get(created.id, stream=True)]
    assert [e.event_id for e in replay] == [e.event_id for e in events]


async def test_raw_sse_frames_name_their_event(emu: Emu) -> None:
    status, text = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "x", "stream": True}
    )
    assert status == 200
    for event in sse_events(text):
        check_event(event)


async def test_a_bad_last_event_id_is_refused(emu: Emu) -> None:
    created = await emu.aio.create(model=MODEL, input="x")
    for bad in ("nope", "evt_99999"):
        with pytest.raises(sdk_errors.BadRequestError):
            await emu.aio.get(created.id, stream=True, last_event_id=bad)
    status, _ = await emu.raw("GET", f"interactions/{created.id}?last_event_id=evt_1")
    assert status == 400


# -- agents ---------------------------------------------------------------------------------------
async def test_deep_research_runs_steps_and_output_text_is_the_final_report(emu: Emu) -> None:
    created = await emu.aio.create(
        agent=AGENT,
        input="Research the history of Google TPUs.",
        background=True,
        agent_config={"type": "deep-research", "thinking_summaries": "auto"},
    )
    assert created.agent == AGENT and created.model is None
    done = await emu.finished(created.id)
    # GET holds the input and the report (a recorded real run); the stream
    # shows the steps on the way.
    assert [s.type for s in done.steps] == ["user_input", "model_output"]
    events = [e async for e in await emu.aio.get(created.id, stream=True)]
    streamed = steps_from_events(events)
    kinds = [s["type"] for s in streamed]
    assert {"thought", "google_search_call", "google_search_result"} <= set(kinds)
    assert kinds.count("model_output") >= 3 and kinds[-1] == "model_output"
    thoughts = [s for s in streamed if s["type"] == "thought"]
    assert all(t["signature"] and t["summary"] for t in thoughts)
    final = done.steps[-1].content[0]
    assert done.output_text == final.text
    assert final.annotations and all(a.type == "url_citation" for a in final.annotations)
    for annotation in final.annotations:
        assert final.text[annotation.start_index : annotation.end_index]
    usage = done.usage.model_dump(exclude_none=True)
    # Every field of the SDK's Usage but those a recorded real answer lacked
    # (issue 24.7; no text in the output breakdown: recorded/vercel_ai/);
    # nothing was cached in a first turn.
    assert set(sdk.Usage.model_fields) - set(usage) == {
        "cached_tokens_by_modality",
        "initial_input_tokens",
        "output_tokens_by_modality",
        "tool_use_tokens_by_modality",
    }
    assert done.usage.grounding_tool_count[0].type == "google_search"


async def test_max_agent_takes_longer_than_the_standard_one(emu: Emu) -> None:
    store = emu.server.store
    quick = await emu.aio.create(agent=AGENT, input="topic", background=True)
    slow = await emu.aio.create(
        agent="deep-research-max-preview-04-2026", input="topic", background=True
    )
    spans = [
        store.interactions[i.id].ready_at - store.interactions[i.id].created_at
        for i in (quick, slow)
    ]
    assert spans[1] > spans[0] > 0


async def test_collaborative_planning_completes_with_the_plan_then_waits_for_the_next_turn(
    emu: Emu,
) -> None:
    # The plan *completes* (the SDK's DeepResearchAgentConfig docstring; the
    # cookbook polls it until `completed`); requires_action is for function calls.
    planning = {"type": "deep-research", "collaborative_planning": True}
    plan = await emu.aio.create(
        agent=AGENT,
        input="Do some research on Google TPUs.",
        background=True,
        agent_config=planning,
    )
    plan = await emu.finished(plan.id)
    assert plan.status == "completed" and "plan" in plan.output_text.lower()
    assert plan.agent_config.collaborative_planning is True
    run = await emu.aio.create(
        agent=AGENT,
        input="The plan looks good, go ahead.",
        previous_interaction_id=plan.id,
        background=True,
        agent_config={"type": "deep-research", "collaborative_planning": False},
    )
    assert (await emu.aio.get(run.id)).previous_interaction_id == plan.id
    done = await emu.finished(run.id)
    assert done.status == "completed" and "Google TPUs" in done.output_text
    assert done.usage.total_cached_tokens > 0  # the plan's turn is the cached context
    # As recorded (issue 24.7): no initial_input_tokens, no tool-use breakdown for Deep
    # Research; no text in the output breakdown (recorded/vercel_ai/).
    assert set(sdk.Usage.model_fields) - set(done.usage.model_dump(exclude_none=True)) == {
        "initial_input_tokens",
        "output_tokens_by_modality",
        "tool_use_tokens_by_modality",
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"agent": "deep-research-pro-preview-99"}, "Unknown agent name"),
        ({"agent": AGENT}, "background"),
        ({"model": "gemini-nope"}, "Unknown model"),
        ({"model": MODEL, "agent": AGENT, "background": True}, "both"),
        ({"agent": AGENT, "background": True, "agent_config": {"type": "dynamic"}}, "type"),
        ({"model": MODEL, "background": True, "store": False}, "store"),
        ({"model": MODEL, "labels": {"Team": "a"}}, "label"),
        ({"model": MODEL, "previous_interaction_id": "emu-nope-0000001"}, "not found"),
    ],
)
async def test_refused_requests(emu: Emu, body: dict[str, Any], message: str) -> None:
    status, answer = await emu.raw("POST", "interactions", {"input": "x", **body})
    assert status in (400, 404), answer
    assert message.lower() in answer["error"]["message"].lower()
    assert emu.server.store.interactions == {}


async def test_unknown_fields_are_refused_by_the_front_end(emu: Emu) -> None:
    with pytest.raises(sdk_errors.BadRequestError) as caught:
        await emu.aio.create(model=MODEL, input="x", extra_body={"metadata": {"a": 1}})
    assert caught.value.body["error"]["status"] == "INVALID_ARGUMENT"  # type: ignore[index]
    assert 'Unknown name "metadata"' in caught.value.body["error"]["message"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("labels", "ok"),
    [
        ({"projekt": "überblick", "日本": "", "k-1_": "v-1_2"}, True),
        ({"k" * 63: "v" * 63}, True),
        ({"k" * 64: "v"}, False),
        ({"k": "V"}, False),
        ({"1k": "v"}, False),
        ({"k": "a b"}, False),
        ({f"k{n}": "v" for n in range(65)}, False),
    ],
)
async def test_label_rules_are_the_apis(emu: Emu, labels: dict[str, str], ok: bool) -> None:
    status, answer = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "x", "labels": labels}
    )
    assert (status == 200) is ok, answer


# -- multi-turn, function calling, images, search -------------------------------------------------
async def test_previous_interaction_id_continues_the_conversation(emu: Emu) -> None:
    first = await emu.aio.create(model=MODEL, input="My name is Ada.")
    second = await emu.aio.create(
        model=MODEL, input="What is my name?", previous_interaction_id=first.id
    )
    assert (await emu.aio.get(second.id)).previous_interaction_id == first.id
    assert (
        second.usage.total_cached_tokens
        == first.usage.total_input_tokens + first.usage.total_output_tokens
    )


async def test_function_calling_loop(emu: Emu) -> None:
    weather = {
        "type": "function",
        "name": "get_weather",
        "description": "The weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    }
    asked = await emu.aio.create(model=MODEL, input="Weather in Paris?", tools=[weather])
    assert asked.status == "requires_action"
    call = next(s for s in asked.steps if s.type == "function_call")
    assert call.name == "get_weather" and set(call.arguments) == {"city"}
    answer = await emu.aio.create(
        model=MODEL,
        previous_interaction_id=asked.id,
        input=[
            {"type": "function_result", "call_id": call.id, "name": call.name, "result": "sunny"}
        ],
        tools=[weather],
    )
    assert answer.status == "completed" and "sunny" in answer.output_text
    with pytest.raises(sdk_errors.BadRequestError):
        await emu.aio.create(
            model=MODEL,
            previous_interaction_id=asked.id,
            input=[{"type": "function_result", "call_id": "call_nope", "result": "x"}],
        )


async def test_streamed_function_call_arrives_as_argument_deltas(emu: Emu) -> None:
    tool = {
        "type": "function",
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    events = [
        e
        async for e in await emu.aio.create(
            model=MODEL, input="lookup x", tools=[tool], stream=True
        )
    ]
    assert any(getattr(e, "delta", None) and e.delta.type == "arguments_delta" for e in events)
    final = events[-1].interaction
    assert final.status == "requires_action"
    assert steps_from_events(events) == dumped(await emu.aio.get(final.id))


async def test_image_modality_produces_an_image(emu: Emu) -> None:
    done = await emu.aio.create(
        model="gemini-3.1-flash-image", input="A red square", response_modalities=["text", "image"]
    )
    assert done.output_image is not None and done.output_image.mime_type == "image/png"
    assert done.output_image.data and done.output_text
    assert done.usage.output_tokens_by_modality[-1].modality == "image"


async def test_google_search_tool_grounds_the_answer(emu: Emu) -> None:
    done = await emu.aio.create(model=MODEL, input="Who won?", tools=[{"type": "google_search"}])
    kinds = [s.type for s in done.steps]
    assert "google_search_call" in kinds and "google_search_result" in kinds
    # A recorded real search answer counts no grounding tool (recorded/vercel_ai/).
    assert done.usage.grounding_tool_count is None and done.usage.total_tool_use_tokens


async def test_max_output_tokens_ends_incomplete(emu: Emu) -> None:
    done = await emu.aio.create(
        model=MODEL,
        input="Write a long essay about rivers",
        generation_config={"max_output_tokens": 2},
    )
    assert done.status == "incomplete" and len(done.output_text.split()) == 2


# -- forced endings -------------------------------------------------------------------------------
@pytest.mark.parametrize("ending", ["incomplete", "budget_exceeded", "failed", "requires_action"])
async def test_forced_endings_carry_partial_steps_and_usage(emu: Emu, ending: str) -> None:
    rate = "fail_rate" if ending == "failed" else f"{ending}_rate"
    emu.server.store.faults = FaultConfig.from_json({rate: 1.0})
    created = await emu.aio.create(
        model=MODEL, input="one two three four five six", background=True
    )
    done = await emu.finished(created.id)
    assert done.status == ending and done.usage is not None
    if ending in ("incomplete", "budget_exceeded"):
        assert 0 < len(done.output_text.split()) < 12
    if ending == "failed":
        assert done.errors and done.errors[0].message
    if ending == "requires_action":
        assert done.steps[-1].type == "function_call"


async def test_requires_continuation_is_continued_by_the_sdk(emu: Emu) -> None:
    emu.server.store.faults = FaultConfig.from_json({"continuation_rate": 1.0})
    merged = await emu.aio.create(model=MODEL, input="a fairly long prompt to answer in two hops")
    assert merged.status == "completed" and len(merged.continuation_ids) == 2
    first = await emu.aio.get(merged.continuation_ids[0])
    assert first.status == "requires_continuation" and first.continuation_token
    assert merged.output_text == fake_output_text("a fairly long prompt to answer in two hops")


async def test_streamed_continuation_hops_are_followed(emu: Emu) -> None:
    emu.server.store.faults = FaultConfig.from_json({"continuation_rate": 1.0})
    events = [
        e async for e in await emu.aio.create(model=MODEL, input="stream two hops", stream=True)
    ]
    completions = [e.interaction.status for e in events if e.event_type == "interaction.completed"]
    assert completions == ["requires_continuation", "completed"]


# -- cancel, delete, retention, errors ------------------------------------------------------------
async def test_cancel_a_running_job_and_refuse_a_finished_one(emu: Emu) -> None:
    emu.server.store.latency = None
    running = await emu.aio.create(model=MODEL, input="x", background=True)
    cancelled = await emu.aio.cancel(running.id)
    assert cancelled.status == "cancelled"
    with pytest.raises(sdk_errors.BadRequestError):
        await emu.aio.cancel(running.id)
    finished = await emu.aio.create(model=MODEL, input="y")
    with pytest.raises(sdk_errors.BadRequestError):
        await emu.aio.cancel(finished.id)


async def test_delete_then_get_is_404(emu: Emu) -> None:
    created = await emu.aio.create(model=MODEL, input="x")
    await emu.aio.delete(created.id)
    with pytest.raises(sdk_errors.NotFoundError):
        await emu.aio.get(created.id)


async def test_store_false_is_not_kept(emu: Emu) -> None:
    done = await emu.aio.create(model=MODEL, input="x", store=False)
    assert done.status == "completed"
    # The answer names no id (a recorded real answer; the SDK reads "" for
    # it); the one the emulator keeps it under is not found either.
    assert done.id == ""
    (kept,) = emu.server.store.interactions
    with pytest.raises(sdk_errors.NotFoundError):
        await emu.aio.get(kept)


async def test_errors_map_to_the_sdks_status_classes(emu: Emu) -> None:
    with pytest.raises(sdk_errors.NotFoundError):
        await emu.aio.get("emu-nope-0000001")
    for status, cls in (
        (429, sdk_errors.RateLimitError),
        (500, sdk_errors.InternalServerError),
        (503, sdk_errors.InternalServerError),
    ):
        emu.server.store.faults = FaultConfig.from_json({"create": {f"rate_{status}": 1.0}})
        with pytest.raises(cls) as caught:
            await emu.aio.create(model=MODEL, input="x")
        assert caught.value.status_code == status
    emu.server.store.faults = FaultConfig()
    status, answer = await emu.raw(
        "POST", "interactions", {"model": MODEL, "input": "x"}, key="wrong"
    )
    assert status == 400 and answer["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    status, answer = await emu.raw("POST", "interactions", {"model": MODEL, "input": "x"}, key=None)
    assert status == 403 and answer["error"]["status"] == "PERMISSION_DENIED"


async def test_retention_makes_get_404() -> None:
    now = [1000.0]
    config = EmulatorConfig(retention_seconds=60.0, clock=lambda: now[0])
    async with EmulatorServer(config) as server:
        client = genai.Client(api_key=server.api_key, http_options={"base_url": server.base_url})
        aio = client.aio.interactions
        created = await aio.create(model=MODEL, input="keep me")
        now[0] += 59.0
        assert (await aio.get(created.id)).status == "completed"
        now[0] += 2.0
        with pytest.raises(sdk_errors.NotFoundError):
            await aio.get(created.id)
        with pytest.raises(sdk_errors.NotFoundError):
            await aio.create(model=MODEL, input="more", previous_interaction_id=created.id)
        await client.aio.aclose()
