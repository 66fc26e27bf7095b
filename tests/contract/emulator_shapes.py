"""Every body the emulator answers, held against google-genai's own pydantic models.

The SDK itself unmarshals responses with `validate=False` and keeps unknown
fields and unknown union variants, so a drift in the emulator's JSON would
pass unnoticed through it. `Recorder` captures each JSON answer of the
Interactions API and each SSE event, and `check_*` validate them with the
SDK's models, then walk the result: no field may land in `model_extra`
(an unknown or misspelt field) and no union may fall back to its
`Unknown…` variant (an unknown step, content, delta or event type).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from google.genai._gaos import errors as sdk_errors
from google.genai._gaos.types.interactions import Interaction, InteractionSSEStreamEvent
from pydantic import BaseModel

from reclaim_tui.emulator import app as emulator_app

__all__ = ["Recorder", "check_error", "check_event", "check_interaction", "recording"]

#: Fields the real API sends that the SDK's model does not declare: `object`
#: ("interaction") is in the REST examples of the streaming docs and in the
#: SDK's `InteractionSseEventInteraction`, not in its `Interaction`.
#: `signature` ("" ) is on a function call's `step.start` in a recorded real
#: stream (recorded/vercel_ai/tool-call-step1.chunks.txt), not in the SDK's
#: `FunctionCallStep`.
_ALLOWED_EXTRA = {"Interaction": {"object"}, "FunctionCallStep": {"signature"}}
_FRONT_END_KEYS = {"code", "message", "status", "details"}


def _walk(value: Any, where: str) -> Iterator[str]:
    """Problems found in a validated value: extra fields, unknown variants."""
    if isinstance(value, BaseModel):
        name = type(value).__name__
        if getattr(value, "is_unknown", False):
            yield f"{where}: an unknown variant ({name}): {getattr(value, 'raw', None)!r}"
            return
        extra = set(value.model_extra or {}) - _ALLOWED_EXTRA.get(name, set())
        if extra:
            yield f"{where}: fields {sorted(extra)} are not in {name}"
        for attr in type(value).model_fields:
            # Read through __dict__: getattr warns on the SDK's deprecated fields.
            yield from _walk(value.__dict__.get(attr), f"{where}.{attr}")
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            yield from _walk(item, f"{where}[{n}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{where}.{key}")


def _strict(model: type[BaseModel], data: Any, where: str) -> BaseModel:
    validated = model.model_validate(data)
    problems = list(_walk(validated, where))
    assert not problems, "\n".join(problems)
    return validated


def check_interaction(data: Any, *, stored: bool = True) -> Interaction:
    """`stored`: False for the answer to a create with store=false, which has no id
    (a recorded real answer: recorded/vercel_ai/multi-turn-stateless-turn2.json)."""
    validated = _strict(Interaction, data, "Interaction")
    assert isinstance(validated, Interaction)
    assert data.get("object") == "interaction"
    assert data.get("created") and data.get("updated")
    if stored:
        assert data.get("id"), data
    else:
        assert "id" not in data, data
    assert bool(data.get("model")) != bool(data.get("agent")), "exactly one of model and agent"
    return validated


def _as_declared(data: Any) -> Any:
    """A tool step's `step.start` as the SDK's model declares it.

    A recorded real stream (recorded/vercel_ai/google-search.chunks.txt)
    starts a search call as `{id, signature, type}` and its result as
    `{call_id, signature, type}`, the arguments and result following in a
    delta; the SDK's step models require both (its stream parser does not
    validate, so it reads the recorded events). Checked here with the
    missing field as the delta brings it, empty."""
    if not isinstance(data, dict) or data.get("event_type") != "step.start":
        return data
    step = data.get("step")
    if not isinstance(step, dict) or not isinstance(step.get("type"), str):
        return data
    kind = step["type"]
    if kind.endswith("_call") and kind != "function_call" and "arguments" not in step:
        return {**data, "step": {**step, "arguments": {}}}
    if kind.endswith("_result") and kind != "function_result" and "result" not in step:
        return {**data, "step": {**step, "result": []}}
    return data


def check_event(data: Any) -> BaseModel:
    data = _as_declared(data)
    event = _strict(InteractionSSEStreamEvent, {"data": data}, "event").data  # type: ignore[attr-defined]
    assert isinstance(event, BaseModel)
    assert data.get("event_id"), "every event carries an event_id"
    return event


def check_error(status: int, data: Any) -> None:
    """A service error (string code, the SDK's error model) or a front-end
    `google.rpc.Status` (integer code equal to the HTTP status)."""
    error = data["error"]
    if isinstance(error.get("code"), int):
        assert set(error) <= _FRONT_END_KEYS and error["code"] == status, error
        assert isinstance(error["message"], str) and error["status"].isupper(), error
        return
    model = (
        sdk_errors.CreateInteractionClientErrorData
        if status < 500
        else sdk_errors.CreateInteractionServerErrorData
    )
    _strict(model, data, "error")
    assert set(error) == {"code", "message"}, error
    assert error["code"] == error["code"].lower() and " " not in error["code"], error


async def _sent_store_false(request: web.Request) -> bool:
    try:
        sent = json.loads(await request.read())
    except ValueError:
        return False
    return isinstance(sent, dict) and sent.get("store") is False


@dataclass
class Recorder:
    """What the emulator answered on the Interactions API (not the admin API)."""

    answers: list[tuple[str, str, int, Any]] = field(default_factory=list)
    #: Positions in `answers` of answers to creates sent with store=false.
    unstored: set[int] = field(default_factory=set)
    events: list[dict[str, Any]] = field(default_factory=list)

    @web.middleware
    async def middleware(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        response = await handler(request)
        if "/interactions" in request.path and not request.path.startswith("/_emulator"):
            if isinstance(response, web.Response) and response.body is not None:
                body = json.loads(bytes(response.body))  # type: ignore[arg-type]
                if request.method == "POST" and await _sent_store_false(request):
                    self.unstored.add(len(self.answers))
                self.answers.append((request.method, request.path, response.status, body))
        return response

    def check_all(self) -> int:
        """Validate everything recorded; the number of bodies and events checked."""
        for n, (method, _path, status, body) in enumerate(self.answers):
            if status >= 400:
                check_error(status, body)
            elif method == "DELETE":
                assert body == {}
            else:
                check_interaction(body, stored=n not in self.unstored)
        for event in self.events:
            check_event(event)
        return len(self.answers) + len(self.events)


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """A recorder whose SSE capture is on; attach `.middleware` to an emulator's app."""
    recorder = Recorder()
    stock_frame = emulator_app.frame

    def frame(event: dict[str, Any]) -> bytes:
        recorder.events.append(event)
        return stock_frame(event)

    monkeypatch.setattr(emulator_app, "frame", frame)
    return recorder
