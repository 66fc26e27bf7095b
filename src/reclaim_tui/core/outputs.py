"""What an interaction produced, read from its stored JSON the way the SDK does.

`output_text` follows google-genai's `_output_properties_from_steps`
(`_gaos/google_genai.py`, 3.3–3.6): walking back from the last step to the
latest `user_input`, thoughts are skipped, and the trailing run of text
blocks of the final model output(s) is the answer. For an agent (Deep
Research) that is the final report, not the notes and interim outputs
before it. `output_media` finds the image, audio and video blocks of the
model outputs after the latest `user_input`, in the order they came.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["MediaOutput", "action_summary", "output_media", "output_text"]

_MEDIA = ("image", "audio", "video")
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/webp": "webp",
    "image/gif": "gif",
    "audio/wav": "wav",
    "audio/mpeg": "mp3",
    "audio/ogg": "ogg",
    "video/mp4": "mp4",
    "video/webm": "webm",
}


@dataclass(frozen=True, slots=True)
class MediaOutput:
    """One non-text output block: inline bytes, or a URI the API keeps."""

    kind: str
    mime_type: str
    data: bytes | None
    uri: str | None

    @property
    def extension(self) -> str:
        return _EXTENSIONS.get(self.mime_type, "bin")


def _steps(raw: Mapping[str, Any]) -> list[Any]:
    steps = raw.get("steps")
    if isinstance(steps, list):
        return steps
    outputs = raw.get("outputs")  # the legacy flat shape, coerced as the SDK does
    return [{"type": "model_output", "content": outputs}] if isinstance(outputs, list) else []


def _trailing_text(content: Sequence[Any], parts: list[str], collecting: bool) -> tuple[bool, bool]:
    """Collect the trailing text blocks of one step; (collecting, stop)."""
    for item in reversed(content):
        if not isinstance(item, Mapping) or item.get("type") != "text":
            if collecting:
                return collecting, True
            continue
        collecting = True
        text = item.get("text")
        parts.append(text if isinstance(text, str) else "")
    return collecting, False


def output_text(raw: Mapping[str, Any]) -> str | None:
    """The text of the final model output, as the SDK's `output_text`."""
    parts: list[str] = []
    collecting = False
    for step in reversed(_steps(raw)):
        kind = step.get("type") if isinstance(step, Mapping) else None
        if kind == "user_input":
            break
        if kind == "thought":
            continue
        if kind != "model_output":
            if collecting:
                break
            continue
        content = step.get("content")
        if not isinstance(content, list):
            continue
        collecting, stop = _trailing_text(content, parts, collecting)
        if stop:
            break
    text = "".join(reversed(parts))
    if text:
        return text
    given = raw.get("output_text")
    return given if isinstance(given, str) and given else None


def output_media(raw: Mapping[str, Any]) -> list[MediaOutput]:
    """Image, audio and video blocks of the model outputs after the latest user input."""
    found: list[MediaOutput] = []
    for step in reversed(_steps(raw)):
        kind = step.get("type") if isinstance(step, Mapping) else None
        if kind == "user_input":
            break
        content = step.get("content") if kind == "model_output" else None
        for item in reversed(content if isinstance(content, list) else []):
            media = _media(item)
            if media is not None:
                found.append(media)
    found.reverse()
    return found


def _media(item: Any) -> MediaOutput | None:
    if not isinstance(item, Mapping) or item.get("type") not in _MEDIA:
        return None
    mime = str(item.get("mime_type") or f"{item['type']}/octet-stream")
    data: bytes | None = None
    if isinstance(item.get("data"), str):
        try:
            data = base64.b64decode(item["data"], validate=True)
        except (binascii.Error, ValueError):
            data = None
    uri = item.get("uri") if isinstance(item.get("uri"), str) else None
    if data is None and uri is None:
        return None
    return MediaOutput(str(item["type"]), mime, data, uri)


def action_summary(raw: Mapping[str, Any], limit: int = 300) -> str:
    """What a `requires_action` interaction asks, in one line: the function
    calls it makes, else the text of its last output (a research plan)."""
    calls = [
        f"{step.get('name') or 'function'}({json.dumps(step.get('arguments') or {})[:80]})"
        for step in _steps(raw)
        if isinstance(step, Mapping) and step.get("type") == "function_call"
    ]
    text = "call " + ", ".join(calls[-3:]) if calls else (output_text(raw) or "an answer")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + " …"
