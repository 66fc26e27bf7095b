"""An interaction answer read straight from its JSON, without google-genai's models.

The stock path (and once `_FastGet` / `_FastCreate` too) validates each
200 answer into the SDK's pydantic `Interaction`, adds its output helpers, and
the backend dumps it back to a dict (`model_dump(mode="json", by_alias=True,
exclude_none=True)`) for `interaction_from_json`: a large share of the warm
service's CPU for nothing. `plain_answer` gives that same dict from
`json.loads` when the answer is in the shape where the round trip changes
nothing but the helpers it adds, and None otherwise (the caller then takes the
SDK's own parser):

- a JSON object with a string `id` (a key the model does not know, such as
  `object`, is kept verbatim: the SDK's models are `extra="allow"` in 3.3–3.6);
- no `null` anywhere in the text (`exclude_none` drops optional fields that are
  null, and nested required ones it keeps: the text is only searched for the
  four letters, so a string containing them takes the SDK path too);
- none of the output helpers already there, no legacy Lyria shape (`outputs`
  instead of `steps`, which the SDK rewrites), `steps` a list of objects with a
  string `type`, each `content` a list of objects.

The helpers are added as every SDK version in range adds them (`Interaction.
_populate_output_helpers`): `output_text`, always a string ("" without text),
the trailing text blocks of the last model outputs; `output_image` / `_audio` /
`_video`, the last such block of the model outputs after the latest input.
What the SDK would still change inside a step (pydantic's lax coercions of a
mistyped value) is outside this check: the API sends its schema's types, and
tests/contract/test_direct_answers.py proves both paths equal on the emulator's
answers (completed, failed, incomplete, requires_action, agents, plans, usage)
on the oldest and the newest SDK of the range.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["plain_answer"]

_HELPERS = ("output_text", "output_image", "output_audio", "output_video")
_MEDIA = ("image", "audio", "video")


def plain_answer(text: str) -> dict[str, Any] | None:
    """The SDK's dump of this answer, or None when it is not in the checked shape."""
    if "null" in text:
        return None
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return None
    if any(key in raw for key in _HELPERS) or "outputs" in raw:
        return None
    steps = raw.get("steps", [])
    if not isinstance(steps, list) or not all(_plain_step(step) for step in steps):
        return None
    raw["output_text"] = _output_text(steps)
    for kind, block in _last_media(steps).items():
        raw[f"output_{kind}"] = block
    return raw


def _plain_step(step: Any) -> bool:
    if not isinstance(step, dict) or not isinstance(step.get("type"), str):
        return False
    content = step.get("content", [])
    return isinstance(content, list) and all(isinstance(item, dict) for item in content)


def _output_text(steps: list[dict[str, Any]]) -> str:
    # Interaction._populate_output_helpers (google-genai 3.3–3.6), on dicts.
    parts: list[str] = []
    collecting = False
    for step in reversed(steps):
        kind = step["type"]
        if kind == "user_input":
            break
        if kind == "thought":
            continue
        if kind != "model_output":
            if collecting:
                break
            continue
        stop = False
        for item in reversed(step.get("content", [])):
            if item.get("type") == "text":
                collecting = True
                value = item.get("text")
                parts.append(value if isinstance(value, str) else "")
            elif collecting:
                stop = True
                break
        if stop:
            break
    return "".join(reversed(parts))


def _last_media(steps: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for step in reversed(steps):
        kind = step["type"]
        if kind == "user_input":
            break
        if kind != "model_output":
            continue
        for item in reversed(step.get("content", [])):
            media = item.get("type")
            if media in _MEDIA and media not in found:
                found[media] = item
    return found
