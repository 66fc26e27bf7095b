"""An interaction's Server-Sent Events, as google-genai 3.3.0 parses them.

The events are the `InteractionSSEEvent` union (`_gaos/types/interactions/
interactionsseevent.py`, discriminated by `event_type`): `interaction.created`,
`interaction.status_update`, `step.start` / `step.delta` / `step.stop`,
`error`, `interaction.completed`. The order follows the streaming docs'
example (ai.google.dev/gemini-api/docs/interactions/streaming): created, a
status update, then each output step as start, deltas, stop, indexed from 0
(the user's input is not streamed). Each frame is `event: <type>` plus a
JSON `data:` line; the stream ends with `data: [DONE]`, the sentinel the
SDK's `AsyncStream` is built with.

Recorded real streams (tests/contract/recorded/vercel_ai/) fix the
envelope: `interaction.created` carries only id, status, object and model;
one `status_update` (in_progress) follows it; the last step's `step.stop`
is followed by `interaction.completed` directly, whatever the final status
(the SDK documents `interaction.completed` with status
`requires_continuation` for a paused hop), after an `error` event when the
run failed. Tool steps start bare and bring their arguments or result in a
delta (events.py `_step_parts`).

Not documented, chosen here: every event carries an `event_id` (the docs
show it on some events only) of the form `evt_<n>`, and resuming with
`last_event_id` replays what came after it. A step's events are sent when
the step is done, so the stream and GET agree on a model's steps (a
completed Deep Research GET shows only its report: interaction.py).
"""

from __future__ import annotations

import json
from typing import Any

from reclaim_tui.emulator.errors import ApiProblem
from reclaim_tui.emulator.interaction import StoredInteraction, iso

__all__ = ["DONE", "event_index", "frame", "timeline"]

DONE = b"data: [DONE]\n\n"
_TEXT_CHUNK_WORDS = 8
_ARGUMENT_CHUNK_CHARS = 24


def frame(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event['event_type']}\ndata: {data}\n\n".encode()


def event_index(event_id: str) -> int:
    """The position after which a resumed stream starts; ApiProblem for a bad id."""
    number = event_id.removeprefix("evt_")
    if not event_id.startswith("evt_") or not number.isdigit():
        raise ApiProblem(400, f"last_event_id {event_id!r} is not an event id of this stream")
    return int(number) + 1


def _text_deltas(block: dict[str, Any]) -> list[dict[str, Any]]:
    words = str(block.get("text", "")).split(" ")
    chunks = [
        " ".join(words[i : i + _TEXT_CHUNK_WORDS]) for i in range(0, len(words), _TEXT_CHUNK_WORDS)
    ]
    deltas = [
        {"type": "text", "text": chunk + (" " if n < len(chunks) - 1 else "")}
        for n, chunk in enumerate(chunks)
    ]
    if block.get("annotations"):
        deltas.append({"type": "text_annotation_delta", "annotations": block["annotations"]})
    return deltas


def _content_deltas(block: dict[str, Any]) -> list[dict[str, Any]]:
    if block.get("type") == "text":
        return _text_deltas(block)
    return [block]  # image, audio, video: one delta of the same shape


def _step_parts(step: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """How a step streams: what `step.start` carries, then its deltas."""
    kind = step["type"]
    if kind == "model_output":
        deltas = [d for block in step.get("content") or () for d in _content_deltas(block)]
        return {"type": kind}, deltas
    if kind == "thought":
        deltas = [{"type": "thought_signature", "signature": step["signature"]}]
        deltas += [{"type": "thought_summary", "content": s} for s in step.get("summary") or ()]
        return {"type": kind}, deltas
    if kind == "function_call":
        # "function arguments arrive as partial JSON string deltas (arguments_delta)"
        # (the Interactions migration guide); the recorded stream's start carries an
        # empty signature and empty arguments.
        text = json.dumps(step.get("arguments") or {})
        chunks = [
            text[i : i + _ARGUMENT_CHUNK_CHARS] for i in range(0, len(text), _ARGUMENT_CHUNK_CHARS)
        ]
        head = {"id": step["id"], "signature": step.get("signature", ""), "type": kind}
        head.update(name=step["name"], arguments={})
        return head, [{"type": "arguments_delta", "arguments": c} for c in chunks]
    if kind.endswith("_call"):
        # A recorded google_search stream: the start names the call, one delta
        # of the step's own type carries its arguments. The SDK has a delta of
        # the same form for every server tool's call and result.
        head = {"id": step["id"], "signature": step.get("signature", ""), "type": kind}
        return head, [{"type": kind, "arguments": step.get("arguments") or {}}]
    if kind.endswith("_result") and kind != "function_result":
        head = {"call_id": step["call_id"], "signature": step.get("signature", ""), "type": kind}
        delta = {"type": kind, "result": step.get("result") or []}
        if "is_error" in step:
            delta["is_error"] = step["is_error"]
        return head, [delta]
    return step, []


def _public_id(interaction: StoredInteraction) -> str:
    # A recorded real stream of a create with store=false names its
    # interaction "" (recorded/vercel_ai/, multi-turn-stateless-turn1).
    return interaction.id if interaction.request.store else ""


def _head(interaction: StoredInteraction) -> dict[str, Any]:
    return {**interaction.head(), "id": _public_id(interaction)}


def _lifecycle(interaction: StoredInteraction, status: str, at: float) -> dict[str, Any]:
    body = _head(interaction)
    body.update(status=status, created=iso(interaction.created_at), updated=iso(at))
    if "service_tier" in interaction.request.echo:
        body["service_tier"] = interaction.request.echo["service_tier"]
    return body


def _ending(interaction: StoredInteraction, end: float) -> list[dict[str, Any]]:
    # No status update before `interaction.completed`: a recorded real stream
    # goes from the last step's `step.stop` straight to it.
    status = interaction.status_at(end)
    final = _lifecycle(interaction, status, end)
    # A recorded real `interaction.completed` carried the tier it ran on,
    # "standard", although none was requested.
    final.setdefault("service_tier", "standard")
    final["usage"] = interaction.usage_at(end)
    token = interaction.continuation_token(end)
    if token is not None:
        final["continuation_token"] = token
    events = []
    for error in interaction.errors() if status == "failed" else ():
        events.append({"event_type": "error", "error": dict(error)})
    events.append({"event_type": "interaction.completed", "interaction": final})
    return events


def _all_events(interaction: StoredInteraction) -> list[tuple[float, dict[str, Any]]]:
    created = interaction.created_at
    # A foreground stream opens with its interaction `in_progress` (the
    # streaming docs): it is finished only by the events that follow.
    opening = interaction.initial_status if interaction.request.background else "in_progress"
    # Only these four keys: a recorded real `interaction.created` event.
    first = {**_head(interaction), "status": opening}
    out: list[tuple[float, dict[str, Any]]] = [
        (created, {"event_type": "interaction.created", "interaction": first})
    ]
    end = interaction.end_at()
    if end is None or interaction.start_at <= end:
        running = {
            "event_type": "interaction.status_update",
            "interaction_id": _public_id(interaction),
            "status": "in_progress",
        }
        out.append((interaction.start_at, running))
    for index, (at, step) in enumerate(interaction.timed_steps()):
        head, deltas = _step_parts(step)
        out.append((at, {"event_type": "step.start", "index": index, "step": head}))
        out += [(at, {"event_type": "step.delta", "index": index, "delta": d}) for d in deltas]
        out.append((at, {"event_type": "step.stop", "index": index}))
    if end is not None:
        out += [(end, event) for event in _ending(interaction, end)]
    return out


def timeline(
    interaction: StoredInteraction, now: float
) -> tuple[list[dict[str, Any]], float | None]:
    """The events up to `now`, with ids, and when the next one is due (None: the stream is over,
    or nothing more comes by itself)."""
    # Sorted by time (stable), so the events up to any moment are a prefix and
    # an event's position, its id, never changes.
    events = sorted(_all_events(interaction), key=lambda pair: pair[0])
    due = [{**event, "event_id": f"evt_{n}"} for n, (at, event) in enumerate(events) if at <= now]
    later = [at for at, _ in events[len(due) :]]
    end = interaction.end_at()
    if end is not None and now >= end:
        return due, None
    return due, (min(later) if later else now + 1.0)
