"""The Interactions docs' and cookbook's snippets, written as users write them (the
synchronous `client.interactions`), run against the emulator in a thread of its own.

Each test is one snippet: plain generation, background + poll, streaming,
streaming with reconnection, Deep Research, multi-turn, the function-calling
loop, and error handling. Every answer they get is validated against the
SDK's models (emulator_shapes.py).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import _interactions as interaction_errors
from google.genai import types

from reclaim_tui.emulator import EmulatorConfig, EmulatorServer, FaultConfig
from reclaim_tui.emulator.catalog import KNOWN_MODELS
from tests.contract.emulator_shapes import Recorder, recording

__all__ = ["recording"]  # the fixture, imported for pytest

MODEL = "gemini-3-flash-preview"
AGENT = "deep-research-preview-04-2026"
POLL = 0.02  # the docs poll every 10 s; the emulator's runs take well under a second


class LiveEmulator:
    """An emulator serving from its own event loop in a thread (the SDK calls here block)."""

    def __init__(self, config: EmulatorConfig, recorder: Recorder) -> None:
        self.server = EmulatorServer(config)
        self.server.app.middlewares.append(recorder.middleware)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=30)

    def __enter__(self) -> LiveEmulator:
        self.thread.start()
        self.run(self.server.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.run(self.server.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()

    def client(self, **options: Any) -> genai.Client:
        http = types.HttpOptions(base_url=self.server.base_url, **options)
        return genai.Client(api_key=self.server.api_key, http_options=http)


@pytest.fixture
def live(recording: Recorder) -> Iterator[LiveEmulator]:
    config = EmulatorConfig(
        latency=0.1, agent_time_scale=0.002, full_steps=True, models=KNOWN_MODELS
    )
    with LiveEmulator(config, recording) as emulator:
        yield emulator
    assert recording.check_all() > 0


@pytest.fixture
def client(live: LiveEmulator) -> Iterator[genai.Client]:
    client = live.client()
    yield client
    client.close()


def test_quickstart_generate_text(client: genai.Client) -> None:
    interaction = client.interactions.create(
        model=MODEL, input="Explain how AI works in a few words"
    )
    assert interaction.status == "completed"
    assert interaction.output_text


def test_background_task_polled_until_done(client: genai.Client) -> None:
    interaction = client.interactions.create(
        model=MODEL, input="Write a detailed market analysis.", background=True
    )
    statuses = [interaction.status]
    while True:
        interaction = client.interactions.get(interaction.id)
        statuses.append(interaction.status)
        if interaction.status == "completed":
            break
        if interaction.status in ("failed", "cancelled"):
            raise AssertionError(interaction.status)
        time.sleep(POLL)
    # No `queued`: a recorded real run answered in_progress at create (issue 24.6).
    assert statuses[0] == "in_progress" and statuses[-1] == "completed"
    assert interaction.output_text


def test_streaming_text(client: genai.Client) -> None:
    stream = client.interactions.create(model=MODEL, input="Count to from 1 to 25.", stream=True)
    printed, interaction_id = [], None
    for event in stream:
        if event.event_type == "interaction.created":
            interaction_id = event.interaction.id
        if event.event_type == "step.delta":
            if event.delta.type == "text":
                printed.append(event.delta.text)
    assert interaction_id is not None
    assert "".join(printed) == client.interactions.get(interaction_id).output_text


def test_deep_research_streaming_with_reconnection(client: genai.Client) -> None:
    last_event_id = None
    interaction_id = None
    is_complete = False
    report: list[str] = []

    def process_stream(stream: Any, drop_after: int | None = None) -> None:
        nonlocal last_event_id, interaction_id, is_complete
        for n, event in enumerate(stream):
            if event.event_type == "interaction.created":
                interaction_id = event.interaction.id
            if event.event_id:
                last_event_id = event.event_id
            if event.event_type == "step.delta" and event.delta.type == "text":
                report.append(event.delta.text)
            if event.event_type == "interaction.completed":
                is_complete = True
            if drop_after is not None and n + 1 == drop_after:
                stream.close()  # the network drops: resume from last_event_id
                return

    initial = client.interactions.create(
        input="Research the history of Google TPUs.",
        agent=AGENT,
        background=True,
        stream=True,
        agent_config={"type": "deep-research", "thinking_summaries": "auto"},
    )
    process_stream(initial, drop_after=6)
    reconnects = 0
    while not is_complete and interaction_id:
        reconnects += 1
        resumed = client.interactions.get(
            id=interaction_id, stream=True, last_event_id=last_event_id
        )
        process_stream(resumed)
    assert reconnects == 1 and interaction_id
    final = client.interactions.get(interaction_id)
    assert final.status == "completed"
    assert final.output_text and final.output_text in "".join(report)


def test_deep_research_polling(client: genai.Client) -> None:
    interaction = client.interactions.create(
        input="Research the history of Google TPUs.", agent=AGENT, background=True
    )
    while True:
        interaction = client.interactions.get(interaction.id)
        if interaction.status == "completed":
            text = interaction.steps[-1].content[0].text
            break
        assert interaction.status != "failed"
        time.sleep(POLL)
    assert text == interaction.output_text
    assert interaction.agent == AGENT and interaction.model is None


def test_multi_turn_conversation(client: genai.Client) -> None:
    interaction1 = client.interactions.create(model=MODEL, input="Hi, my name is Phil.")
    interaction2 = client.interactions.create(
        model=MODEL, input="What is my name?", previous_interaction_id=interaction1.id
    )
    # A create's answer does not echo it (a recorded real answer): GET does.
    got = client.interactions.get(interaction2.id)
    assert got.previous_interaction_id == interaction1.id
    assert interaction2.output_text and interaction2.usage.total_cached_tokens


def schedule_meeting(attendees: list[str], date: str, time: str, topic: str) -> str:
    return f"Meeting about {topic} on {date} at {time} with {', '.join(attendees)} booked."


SCHEDULE_MEETING = {
    "type": "function",
    "name": "schedule_meeting",
    "description": "Schedules a meeting with specified attendees at a given time and date.",
    "parameters": {
        "type": "object",
        "properties": {
            "attendees": {"type": "array", "items": {"type": "string"}},
            "date": {"type": "string", "description": "Date (e.g., '2024-07-29')"},
            "time": {"type": "string", "description": "Time (e.g., '15:00')"},
            "topic": {"type": "string", "description": "The meeting topic."},
        },
        "required": ["attendees", "date", "time", "topic"],
    },
}


def test_function_calling_loop(client: genai.Client) -> None:
    interaction = client.interactions.create(
        model=MODEL,
        input="Schedule a meeting with Bob and Alice for 03/14/2025 at 10:00 AM about Q3 planning.",
        tools=[SCHEDULE_MEETING],
    )
    rounds = 0
    while interaction.status == "requires_action":
        rounds += 1
        results = []
        for step in interaction.steps:
            if step.type == "function_call":
                result = schedule_meeting(**step.arguments)
                results.append(
                    {
                        "type": "function_result",
                        "name": step.name,
                        "call_id": step.id,
                        "result": result,
                    }
                )
        interaction = client.interactions.create(
            model=MODEL,
            previous_interaction_id=interaction.id,
            input=results,
            tools=[SCHEDULE_MEETING],
        )
    assert rounds == 1 and interaction.status == "completed"
    assert "booked" in interaction.output_text


def test_error_handling(live: LiveEmulator) -> None:
    client = live.client(retry_options=types.HttpRetryOptions(attempts=1))
    try:
        with pytest.raises(interaction_errors.NotFoundError) as missing:
            client.interactions.get("v1_does-not-exist")
        assert missing.value.status_code == 404
        with pytest.raises(interaction_errors.BadRequestError):
            client.interactions.create(agent=AGENT, input="no background")
        live.server.store.faults = FaultConfig.from_json({"create": {"rate_429": 1.0}})
        try:
            client.interactions.create(model=MODEL, input="x")
        except interaction_errors.RateLimitError as exc:
            assert exc.response.headers["retry-after"] == "1"
        else:
            raise AssertionError("no RateLimitError")
        with pytest.raises(ValueError, match="both"):
            client.interactions.create(model=MODEL, agent=AGENT, input="x")
    finally:
        client.close()
