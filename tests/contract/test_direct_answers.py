"""Answers read straight from their JSON (core/gemini/answers.py) equal the stock SDK path.

For a representative set of emulator answers (a create's, a finished get's and a
cancel's; completed, failed, incomplete, budget_exceeded and requires_action model
runs; a Deep Research agent's report; a collaborative plan and its approval turn;
an image output; usage everywhere a run ended), the RemoteInteraction the backend
makes from `plain_answer` equals the one it makes from the SDK's own parse and
dump, on the installed google-genai (CI runs this tier on the oldest and the
newest of the range). And `plain_answer` was the path taken: it is not None.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from google.genai._gaos.google_genai import _add_output_properties_if_interaction
from google.genai._gaos.types.interactions import Interaction
from google.genai._gaos.utils.unmarshal_json_response import unmarshal_json_response

from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.gemini.answers import plain_answer
from reclaim_tui.core.gemini.backend import _to_remote
from reclaim_tui.core.models import RemoteState
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer

MODEL = "gemini-flash-latest"
AGENT = "deep-research-pro-preview-12-2025"
TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
# name: (emulator fault flags, create body, the state its finished get maps to)
CASES: dict[str, tuple[dict[str, float], dict[str, Any], RemoteState]] = {
    "completed": ({}, {"model": MODEL, "input": "Tell me about tides."}, RemoteState.COMPLETED),
    "failed": ({"fail_rate": 1.0}, {"model": MODEL, "input": "x"}, RemoteState.FAILED),
    "incomplete": ({"incomplete_rate": 1.0}, {"model": MODEL, "input": "x"}, RemoteState.FAILED),
    "budget": ({"budget_exceeded_rate": 1.0}, {"model": MODEL, "input": "x"}, RemoteState.FAILED),
    "requires_action": (
        {"requires_action_rate": 1.0},
        {"model": MODEL, "input": "Look up tide.", "tools": [TOOL]},
        RemoteState.ACTION,
    ),
    "image": (
        {},
        {"model": MODEL, "input": "Draw a tide.", "response_modalities": ["image", "text"]},
        RemoteState.COMPLETED,
    ),
    "agent": ({}, {"agent": AGENT, "input": "Research tides."}, RemoteState.COMPLETED),
    "plan": (
        {},
        {
            "agent": AGENT,
            "input": "Research tides.",
            "agent_config": {"type": "deep-research", "collaborative_planning": True},
        },
        RemoteState.COMPLETED,
    ),
}


def _stock(text: str) -> Any:
    """What the stock `get`/`create` returns for a 200 JSON answer (their parser)."""
    parsed = unmarshal_json_response(Interaction, None, text, False)  # type: ignore[arg-type]
    return _add_output_properties_if_interaction(parsed)


class _Api:
    def __init__(self, emu: EmulatorServer, session: aiohttp.ClientSession) -> None:
        self.url = f"{emu.base_url}/v1beta/interactions"
        self.headers = {"x-goog-api-key": emu.api_key or ""}
        self.session = session

    async def call(self, method: str, path: str = "", body: Any = None) -> str:
        async with self.session.request(
            method, self.url + path, json=body, headers=self.headers
        ) as response:
            text = await response.text()
            assert response.status == 200, text
            return text


async def _answers(name: str) -> AsyncIterator[tuple[str, str]]:
    flags, body, _ = CASES[name]
    config = EmulatorConfig.from_flags(latency=0.0, agent_time_scale=0.0, **flags)
    async with EmulatorServer(config) as emu, aiohttp.ClientSession() as session:
        api = _Api(emu, session)
        created = await api.call("POST", body={**body, "background": True})
        yield "create", created
        handle = _stock(created).id
        yield "get", await api.call("GET", f"/{handle}")
        if name == "plan":
            follow = {
                "agent": AGENT,
                "input": "Approved.",
                "previous_interaction_id": handle,
                "agent_config": {"type": "deep-research", "collaborative_planning": False},
                "background": True,
            }
            second = _stock(await api.call("POST", body=follow)).id
            yield "approved get", await api.call("GET", f"/{second}")
        running = {**body, "background": True}
        slow = EmulatorConfig.from_flags(latency=None, **flags)
        async with EmulatorServer(slow) as idle:
            other = _Api(idle, session)
            handle = _stock(await other.call("POST", body=running)).id
            yield "cancel", await other.call("POST", f"/{handle}/cancel")


@pytest.mark.parametrize("name", sorted(CASES))
async def test_direct_answers_equal_the_sdk_path(name: str) -> None:
    seen = []
    async for what, text in _answers(name):
        plain = plain_answer(text)
        assert plain is not None, f"{name} {what}: not read directly: {text[:300]}"
        direct, stock = _to_remote(plain), _to_remote(_stock(text))
        assert direct == stock, f"{name} {what}"
        assert dict(direct.raw) == dict(stock.raw)
        seen.append((what, direct))
    finished = dict(seen)["get"]
    assert finished.state is CASES[name][2]
    if finished.state in (RemoteState.COMPLETED, RemoteState.FAILED):
        assert finished.usage, f"{name}: the finished answer carries usage"
    if name == "image":
        assert "output_image" in finished.raw
    if name in ("agent", "plan", "completed"):
        assert finished.output_text


async def test_the_backend_reads_the_same_either_way() -> None:
    """GeminiBackend with the fast path (answers read directly) and on the stock SDK
    give equal RemoteInteractions for the same interactions."""
    config = EmulatorConfig.from_flags(latency=0.0, agent_time_scale=0.0)
    async with EmulatorServer(config) as emu, aiohttp.ClientSession() as session:
        api = _Api(emu, session)
        fast = GeminiBackend(emu.api_key, emu.base_url)
        stock = GeminiBackend(emu.api_key, emu.base_url, fast_path=False)
        try:
            for _, body, _ in CASES.values():
                flags_free = {**body, "background": True}
                handle = _stock(await api.call("POST", body=flags_free)).id
                got = await fast.get(handle)
                assert got == await stock.get(handle)
                assert fast.fast_path and not stock.fast_path
        finally:
            await fast.aclose()
            await stock.aclose()


@pytest.mark.parametrize(
    "text",
    [
        '{"id": "a", "status": "completed", "usage": null}',  # a null: the SDK drops it
        '{"id": "a", "model": "lyria-3-pro-preview", "outputs": []}',  # the legacy shape
        '{"id": "a", "status": "completed", "steps": [{"content": []}]}',  # a step without type
        '{"id": "a", "status": "completed", "output_text": "x"}',  # a helper already there
        '{"status": "completed"}',  # no id
        "[1, 2]",
        "not json",
    ],
)
def test_other_shapes_take_the_sdk_path(text: str) -> None:
    assert plain_answer(text) is None


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _image(data: str) -> dict[str, Any]:
    return {"type": "image", "mime_type": "image/png", "data": data}


def _out(*content: dict[str, Any]) -> dict[str, Any]:
    return {"type": "model_output", "content": list(content)}


_USER = {"type": "user_input", "content": [_text("q")]}
_THOUGHT = {"type": "thought", "signature": "c2ln"}


@pytest.mark.parametrize(
    "steps",
    [
        [_USER, _out(_text("a"), _text("b"))],  # trailing text blocks, in order
        [_USER, _out(_text("a"), _image("aQ=="), _text("b"), _text("c"))],
        [_USER, _out(_text("a")), _THOUGHT, _out(_text("b"))],  # thoughts skipped
        [_USER, _out(_text("a")), {"type": "function_call", "id": "1", "name": "f"}],
        [_USER, _out(_image("MQ=="), _image("Mg==")), _out(_image("Mw=="))],  # the last image
        [_out(_text("old"), _image("MQ==")), _USER, _out(_text("new"))],  # after the input
        [_USER, _out({"type": "audio", "mime_type": "audio/wav", "data": "AA=="})],
        [_USER, _out({"type": "video", "uri": "gs://b/v.mp4"}, _text(""))],
        [],
    ],
)
def test_the_output_helpers_are_the_sdks(steps: list[dict[str, Any]]) -> None:
    """Answers the emulator does not make (several blocks, media, inputs in between)."""
    raw = {"id": "i", "object": "interaction", "status": "completed", "steps": steps}
    text = json.dumps(raw)
    plain = plain_answer(text)
    assert plain is not None
    assert _to_remote(plain) == _to_remote(_stock(text))
