"""What an interaction will produce, decided when it is created.

A `Script` is the list of output steps (google-genai's step types:
`thought`, `model_output`, `function_call`, `google_search_call` /
`_result`, `url_context_call` / `_result`), each with the fraction of the
run at which it is done, and the status the run ends in. The store reveals
steps as their time comes (GET and the SSE stream see the same ones).

Which steps a request gets follows the documented behaviour: function tools
make the model call one and stop at `requires_action` until a
`function_result` comes back with `previous_interaction_id`; Deep Research
thinks, searches, reads and writes several outputs, the last one the report
(`output_text` is its text, so a search/read sits between the interim notes
and the report, as the SDK's `_output_properties_from_steps` needs);
`collaborative_planning` completes with a plan as its output; the next
turn approves it (`collaborative_planning` false: the research runs) or
refines it (true: a new plan), DESIGN.md §8. `max_output_tokens` cuts the
answer short (`incomplete`).
The wording, the number of steps and their timing are the emulator's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from reclaim_tui.emulator.content import (
    digest,
    input_text,
    model_text,
    png_base64,
    signature,
    sources,
    tokens,
)
from reclaim_tui.emulator.request import CreateRequest
from reclaim_tui.emulator.structured import json_text

__all__ = ["OUTCOMES", "Planned", "Script", "Turn", "plan"]

#: Endings a fault knob can force on an interaction (FaultConfig rates).
OUTCOMES = ("failed", "incomplete", "budget_exceeded", "requires_action", "requires_continuation")
_FAILED_MESSAGE = "the model failed to produce a response (emulated)"


@dataclass(frozen=True, slots=True)
class Planned:
    """One output step and the fraction of the run (0–1] at which it is done."""

    step: dict[str, Any]
    at: float


@dataclass(frozen=True)
class Script:
    """The output steps of a run and how it ends."""

    steps: tuple[Planned, ...]
    status: str = "completed"
    errors: tuple[dict[str, Any], ...] = ()
    continuation_token: str | None = None
    #: Text a continuation hop will produce (requires_continuation only).
    rest: str | None = None
    #: Share of the agent's usual run time this turn takes (a plan is quick).
    share: float = 1.0


@dataclass(frozen=True)
class Turn:
    """A create request with what the store resolved from its references."""

    request: CreateRequest
    #: The question the conversation is about (the first turn's input text).
    topic: str
    #: Function calls the previous interaction is waiting on: id → name.
    calls: dict[str, str]
    #: Text left by the previous hop when this one continues it.
    rest: str | None = None
    #: Whether a model's answer starts with a `thought` step (its signature),
    #: as Gemini 3 models' answers do (the streaming docs' example).
    thinking: bool = True

    @property
    def summaries(self) -> bool:
        config = self.request.echo.get("generation_config") or {}
        wanted = {
            config.get("thinking_summaries"),
            self.request.agent_config.get("thinking_summaries"),
        }
        return "auto" in wanted


# -- single steps -----------------------------------------------------------------------
def _thought(turn: Turn, n: int, summary: str, at: float) -> Planned:
    step: dict[str, Any] = {"type": "thought", "signature": signature(turn.topic, n)}
    if turn.summaries:
        step["summary"] = [{"type": "text", "text": summary}]
    return Planned(step, at)


def _thinking(turn: Turn, n: int, summary: str, at: float) -> tuple[Planned, ...]:
    """A model's thought step, when its answers show one (agents always do)."""
    return (_thought(turn, n, summary, at),) if turn.thinking or turn.summaries else ()


def _output(content: list[dict[str, Any]], at: float) -> Planned:
    return Planned({"type": "model_output", "content": content}, at)


def _cited_text(sentences: Sequence[tuple[str, dict[str, str]]], sep: str = " ") -> dict[str, Any]:
    """A text block whose sentences carry `url_citation` annotations (character offsets)."""
    text, annotations = "", []
    for sentence, source in sentences:
        start = len(text)
        text += sentence + sep
        citation = {"type": "url_citation", "url": source["url"], "title": source["title"]}
        annotations.append({**citation, "start_index": start, "end_index": start + len(sentence)})
    return {"type": "text", "text": text.rstrip(), "annotations": annotations}


def _search(turn: Turn, n: int, queries: list[str], at: float) -> list[Planned]:
    call_id = f"search_{digest(turn.topic, n)[:10]}"
    found = sources(" ".join(queries), 3)
    chips = "".join(f'<a class="chip" href="{s["url"]}">{s["title"]}</a>' for s in found)
    call = {
        "type": "google_search_call",
        "id": call_id,
        "arguments": {"queries": queries},
        "search_type": "web_search",
    }
    result = {
        "type": "google_search_result",
        "call_id": call_id,
        "result": [{"search_suggestions": f'<div class="carousel">{chips}</div>'}],
        # A recorded real search result step carries it, streamed or not.
        "is_error": False,
    }
    return [Planned(call, at), Planned(result, at + 0.04)]


def _read(turn: Turn, n: int, urls: list[str], at: float) -> list[Planned]:
    call_id = f"read_{digest(turn.topic, n)[:10]}"
    call = {"type": "url_context_call", "id": call_id, "arguments": {"urls": urls}}
    result = {
        "type": "url_context_result",
        "call_id": call_id,
        "result": [{"url": url, "status": "success"} for url in urls],
    }
    return [Planned(call, at), Planned(result, at + 0.03)]


# -- plain models -----------------------------------------------------------------------
def _answer(turn: Turn) -> Script:
    request = turn.request
    content: list[dict[str, Any]] = []
    if request.wants_text:
        text = model_text(request.input)
        schema = request.json_schema
        if schema is not None:
            text = json_text(schema, text)
        content.append({"type": "text", "text": text})
    if request.wants_image:
        data = png_base64(digest(request.input))
        content.append({"type": "image", "mime_type": "image/png", "data": data})
    thought = _thinking(turn, 0, f"Answering: {turn.topic[:80]}", 0.5)
    return Script((*thought, _output(content, 1.0)))


def _arguments(schema: Any, text: str) -> dict[str, Any]:
    """Arguments that fit a function's JSON schema, drawn from the prompt."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return {}
    properties: dict[str, Any] = schema["properties"]
    names = schema.get("required") or list(properties)
    samples = {"integer": 1, "number": 1.0, "boolean": True, "object": {}}
    arguments: dict[str, Any] = {}
    for name in names:
        found = properties.get(name)
        prop: dict[str, Any] = found if isinstance(found, dict) else {}
        kind = prop.get("type", "string")
        if prop.get("enum"):
            arguments[name] = prop["enum"][0]
        elif kind == "array":
            arguments[name] = [" ".join(text.split()[:2]) or name]
        else:
            arguments[name] = samples.get(kind, " ".join(text.split()[:6]) or name)
    return arguments


def _call_function(turn: Turn, functions: list[dict[str, Any]]) -> Script:
    text = input_text(turn.request.input)
    chosen = next((f for f in functions if f["name"] in text), functions[0])
    call = {
        "type": "function_call",
        "id": f"call_{digest(text, chosen['name'])[:12]}",
        "name": chosen["name"],
        "arguments": _arguments(chosen.get("parameters"), text),
    }
    steps = (*_thinking(turn, 0, f"Calling {chosen['name']}", 0.5), Planned(call, 1.0))
    return Script(steps, status="requires_action")


def _function_results(spec_input: Any) -> list[dict[str, Any]]:
    items = spec_input if isinstance(spec_input, list) else [spec_input]
    return [i for i in items if isinstance(i, dict) and i.get("type") == "function_result"]


def _answer_results(turn: Turn) -> Script:
    parts = []
    for result in _function_results(turn.request.input):
        name = result.get("name") or turn.calls.get(str(result.get("call_id")), "the function")
        value = result.get("result")
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        parts.append(f"{name} returned {shown}.")
    text = f"Done. {' '.join(parts)} (answer to: {turn.topic[:80]})"
    content = [{"type": "text", "text": text}]
    thought = _thinking(turn, 1, "Reading the function results", 0.5)
    return Script((*thought, _output(content, 1.0)))


def _grounded(turn: Turn) -> Script:
    found = sources(turn.topic, 2)
    sentences = [(f"According to {s['title']}, this is covered in detail.", s) for s in found]
    answer = {"type": "text", "text": model_text(turn.request.input)}
    steps = [*_thinking(turn, 0, "Searching the web", 0.2)]
    steps += _search(turn, 0, [turn.topic[:80]], 0.35)
    steps.append(_output([answer, _cited_text(sentences)], 1.0))
    return Script(tuple(steps))


# -- Deep Research ----------------------------------------------------------------------
def _research(turn: Turn) -> Script:
    topic = turn.topic[:120]
    found = sources(topic, 4)
    urls = [s["url"] for s in found]
    steps = [_thought(turn, 0, f"Planning the research on {topic}", 0.05)]
    steps += _search(turn, 1, [topic, f"{topic} overview"], 0.10)
    steps.append(_thought(turn, 2, "Reading the first sources", 0.22))
    steps += _read(turn, 2, urls[:2], 0.28)
    notes = [
        (f"Early sources describe {topic}.", found[0]),
        ("They agree on the basics.", found[1]),
    ]
    steps.append(_output([_cited_text(notes)], 0.40))
    steps += _search(turn, 3, [f"{topic} latest developments", f"{topic} criticism"], 0.50)
    steps.append(_thought(turn, 4, "Comparing the sources", 0.62))
    steps.append(_output([_cited_text([(f"Newer work extends {topic}.", found[2])])], 0.70))
    steps += _read(turn, 5, urls[2:], 0.78)
    steps.append(_thought(turn, 6, "Writing the report", 0.90))
    report = [(f"# {topic}", found[0])] + [
        (f"Finding {n + 1}: {source['title']} is relevant.", source)
        for n, source in enumerate(found)
    ]
    steps.append(_output([_cited_text(report, sep="\n\n")], 1.0))
    return Script(tuple(steps))


def _planning(turn: Turn) -> Script:
    topic = turn.topic[:120]
    plan_text = "\n".join(
        [
            f"Research plan for: {topic}",
            f"1. Search for an overview of {topic}.",
            "2. Read the most cited sources.",
            "3. Look for recent developments and criticism.",
            "4. Write a cited report.",
            "Reply to approve or change this plan.",
        ]
    )
    steps = (
        _thought(turn, 0, "Drafting a plan", 0.5),
        _output([{"type": "text", "text": plan_text}], 1.0),
    )
    # Completed, the plan as its output: the user approves or refines it in
    # the next turn (the SDK's DeepResearchAgentConfig docstring; the
    # cookbook's Deep Research notebook polls the plan until `completed`).
    return Script(steps, share=0.1)


# -- endings ----------------------------------------------------------------------------
def _truncate_text(block: dict[str, Any], words: int) -> dict[str, Any]:
    kept = " ".join(str(block.get("text", "")).split()[:words])
    out = {**block, "text": kept}
    annotations = [a for a in block.get("annotations") or () if a.get("end_index", 0) <= len(kept)]
    if "annotations" in block:
        out["annotations"] = annotations
    return out


def _cut(script: Script, keep_share: float) -> tuple[Planned, ...]:
    """The steps up to the last model output, whose text keeps `keep_share` of its words."""
    steps = list(script.steps)
    last = max((i for i, p in enumerate(steps) if p.step["type"] == "model_output"), default=None)
    if last is None:
        return tuple(p for p in steps if p.step["type"] == "thought")
    output = steps[last].step
    content = []
    for block in output.get("content") or ():
        if block.get("type") == "text":
            block = _truncate_text(block, max(1, int(tokens(block["text"]) * keep_share)))
        content.append(block)
    return (*steps[:last], Planned({**output, "content": content}, steps[last].at))


def _final_text(script: Script) -> str:
    for planned in reversed(script.steps):
        if planned.step["type"] == "model_output":
            texts = [
                b.get("text", "")
                for b in planned.step.get("content") or ()
                if b.get("type") == "text"
            ]
            return " ".join(texts)
    return ""


def _capped(script: Script, turn: Turn) -> Script:
    config = turn.request.echo.get("generation_config") or {}
    limit = config.get("max_output_tokens")
    if not isinstance(limit, int) or limit <= 0 or tokens(_final_text(script)) <= limit:
        return script
    share = limit / tokens(_final_text(script))
    return replace(script, steps=_cut(script, share), status="incomplete")


def _forced(script: Script, outcome: str, turn: Turn) -> Script:
    if outcome == "failed":
        partial = tuple(p for p in script.steps if p.at <= 0.5 and p.step["type"] != "model_output")
        error = {"code": "model_error", "message": _FAILED_MESSAGE}
        return replace(script, steps=partial, status="failed", errors=(error,))
    if outcome in ("incomplete", "budget_exceeded"):
        return replace(script, steps=_cut(script, 0.5), status=outcome)
    if script.status != "completed":
        return script
    if outcome == "requires_action":
        # The real API stops here only for client tools or a plan; the fault
        # knob makes any run ask, through a function the emulator names.
        declared = [t for t in turn.request.tools if t["type"] == "function"]
        functions = declared or [{"type": "function", "name": "emulated_action"}]
        return _call_function(turn, functions)
    return _paused(script, turn)


def _paused(script: Script, turn: Turn) -> Script:
    text = _final_text(script)
    words = text.split()
    half = max(1, len(words) // 2)
    token = f"ct_{digest(turn.topic, text)[:16]}"
    steps = (*script.steps[:-1], _output([{"type": "text", "text": " ".join(words[:half])}], 1.0))
    return replace(
        script,
        steps=steps,
        status="requires_continuation",
        continuation_token=token,
        # The rest continues the same text: its leading space joins the hops' words.
        rest=" " + " ".join(words[half:]),
    )


def _base(turn: Turn) -> Script:
    request = turn.request
    if turn.rest is not None:
        return Script((_output([{"type": "text", "text": turn.rest}], 1.0),))
    spec = request.agent_spec
    if spec is not None and spec.researches:
        planning = bool(request.agent_config.get("collaborative_planning"))
        return _planning(turn) if planning else _research(turn)
    if _function_results(request.input):
        return _answer_results(turn)
    functions = [t for t in request.tools if t["type"] == "function"]
    if functions:
        return _call_function(turn, functions)
    if any(t["type"] == "google_search" for t in request.tools):
        return _grounded(turn)
    return _answer(turn)


def plan(turn: Turn, outcome: str | None = None) -> Script:
    """The script of `turn`, ending as `outcome` forces (None: as the request leads)."""
    script = _capped(_base(turn), turn)
    return _forced(script, outcome, turn) if outcome else script
