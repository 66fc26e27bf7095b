"""The Interactions calls google-genai 2.x has, run against a base URL; one JSON report.

Run by tests/contract/test_genai2_client.py in a virtualenv of its own with
google-genai 2.x (what pydantic-ai and other frameworks pin: `<3`), never
imported by the suite: `python genai2_calls.py BASE_URL API_KEY`. Each call's
facts go to the report under its name, or the exception that stopped it.
Frameworks call the API this way: pydantic-ai's Interactions model is
stateless (`store=False`, the whole history as input).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from google import genai
from google.genai import types

MODEL = "gemini-2.5-flash"
AGENT = "deep-research-preview-04-2026"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True)


def foreground(client: genai.Client) -> dict[str, Any]:
    done = client.interactions.create(model=MODEL, input="Tell me a joke.")
    got = client.interactions.get(done.id)
    return {
        "status": done.status,
        "text": done.steps[-1].content[0].text,
        "got_status": got.status,
        "got_steps": [s.type for s in got.steps],
        "service_tier": dump(done).get("service_tier"),
    }


def background(client: genai.Client) -> dict[str, Any]:
    created = client.interactions.create(model=MODEL, input="Summarise.", background=True)
    seen = [created.status]
    for _ in range(200):
        got = client.interactions.get(created.id)
        seen.append(got.status)
        if got.status not in ("queued", "in_progress"):
            break
        time.sleep(0.05)
    return {"statuses": seen, "steps": [s.type for s in got.steps]}


def cancel_and_delete(client: genai.Client) -> dict[str, Any]:
    # An agent's run takes minutes: still running when the cancel comes.
    created = client.interactions.create(agent=AGENT, input="History of TPUs", background=True)
    cancelled = client.interactions.cancel(created.id)
    client.interactions.delete(created.id)
    try:
        client.interactions.get(created.id)
        after = "found"
    except Exception as exc:  # the SDK's NotFoundError
        after = type(exc).__name__
    return {"cancelled": cancelled.status, "after_delete": after}


def streaming(client: genai.Client) -> dict[str, Any]:
    events = list(client.interactions.create(model=MODEL, input="Count to five.", stream=True))
    text = "".join(
        e.delta.text
        for e in events
        if e.event_type == "step.delta" and getattr(e.delta, "type", None) == "text"
    )
    final = events[-1]
    return {
        "kinds": [e.event_type for e in events],
        "text": text,
        "final_status": final.interaction.status,
    }


def stateless_function_call(client: genai.Client) -> dict[str, Any]:
    question = {"type": "user_input", "content": [{"type": "text", "text": "Weather in Paris?"}]}
    asked = client.interactions.create(model=MODEL, input=[question], tools=[WEATHER], store=False)
    history = [question, *(dump(s) for s in asked.steps)]
    call = next(s for s in history if s["type"] == "function_call")
    history.append(
        {"type": "function_result", "name": call["name"], "call_id": call["id"], "result": "sunny"}
    )
    done = client.interactions.create(model=MODEL, input=history, tools=[WEATHER], store=False)
    return {
        "asked": asked.status,
        "history": [s["type"] for s in history],
        "status": done.status,
        "text": done.steps[-1].content[0].text,
    }


def stateful(client: genai.Client) -> dict[str, Any]:
    first = client.interactions.create(model=MODEL, input="My name is Ada.")
    second = client.interactions.create(
        model=MODEL, input="What is my name?", previous_interaction_id=first.id
    )
    return {"status": second.status, "cached": second.usage.total_cached_tokens}


def structured(client: genai.Client) -> dict[str, Any]:
    fmt = [{"type": "text", "mime_type": "application/json", "schema": PERSON}]
    done = client.interactions.create(model=MODEL, input="Invent a person.", response_format=fmt)
    return {"status": done.status, "value": json.loads(done.steps[-1].content[0].text)}


CALLS: dict[str, Callable[[genai.Client], dict[str, Any]]] = {
    "foreground": foreground,
    "background": background,
    "cancel_and_delete": cancel_and_delete,
    "streaming": streaming,
    "stateless_function_call": stateless_function_call,
    "stateful": stateful,
    "structured": structured,
}


def main() -> None:
    base_url, api_key = sys.argv[1], sys.argv[2]
    options = types.HttpOptions(base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1))
    client = genai.Client(api_key=api_key, http_options=options)
    report: dict[str, Any] = {"sdk": genai.__version__}
    for name, call in CALLS.items():
        try:
            report[name] = call(client)
        except Exception as exc:
            report[name] = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
