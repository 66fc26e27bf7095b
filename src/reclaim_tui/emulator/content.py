"""Deterministic stand-ins for what a model produces: text, thought signatures,
images, search sources, token counts.

Everything is derived from the request's content (never from ids, clocks or
the sequence number), so two equal requests get equal answers: the fast-path
tests compare two interactions created from the same job.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from collections.abc import Sequence
from typing import Any

from reclaim_tui.fake_answer import fake_output_text

__all__ = [
    "IMAGE_TOKENS",
    "digest",
    "input_text",
    "joined",
    "model_text",
    "png_base64",
    "signature",
    "sources",
    "tokens",
]

#: Output tokens billed per generated image (Gemini's documented 1290 for a
#: 1024px image of gemini-2.5-flash-image; the emulator uses it for every model).
IMAGE_TOKENS = 1290


def digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()


def tokens(text: str) -> int:
    """The emulator's token count: one per whitespace-separated word."""
    return len(text.split())


def model_text(spec_input: Any) -> str:
    """A plain model's answer to `spec_input` (the rule FakeBackend shares)."""
    return fake_output_text(spec_input)


def _item_text(item: Any) -> str:
    if not isinstance(item, dict):
        return ""
    if item.get("type") == "text":
        return str(item.get("text") or "")
    if item.get("type") == "user_input":
        return " ".join(_item_text(c) for c in item.get("content") or ())
    if item.get("type") == "function_result":
        result = item.get("result")
        return result if isinstance(result, str) else json.dumps(result, sort_keys=True)
    return ""


def input_text(spec_input: Any) -> str:
    """The text a request's input carries (a string, a content, contents or steps)."""
    if isinstance(spec_input, str):
        return spec_input
    if isinstance(spec_input, dict):
        return _item_text(spec_input)
    if isinstance(spec_input, list):
        return " ".join(t for t in (_item_text(i) for i in spec_input) if t)
    return ""


def signature(*parts: Any) -> str:
    """An opaque thought signature (base64, as the SDK's `signature` fields are)."""
    raw = hashlib.sha256(repr(("signature", *parts)).encode("utf-8")).digest()
    return base64.b64encode(raw[:24]).decode("ascii")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_base64(seed: str, size: int = 16) -> str:
    """A small valid PNG, one colour drawn from `seed`, base64-encoded."""
    red, green, blue = hashlib.sha256(seed.encode("utf-8")).digest()[:3]
    row = b"\x00" + bytes((red, green, blue)) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(row * size))
        + _png_chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode("ascii")


def sources(topic: str, count: int) -> list[dict[str, str]]:
    """Web sources a search on `topic` finds: title and URL (example.com, never real)."""
    words = [w.strip(".,;:!?\"'()").lower() for w in topic.split()]
    slug = "-".join(w for w in words if w.isalnum())[:48] or "topic"
    found = []
    for n in range(count):
        key = digest(topic, n)[:8]
        found.append(
            {
                "title": f"{topic[:60]} — source {n + 1}",
                "url": f"https://www.example.com/{slug}/{key}",
            }
        )
    return found


def joined(parts: Sequence[str]) -> str:
    return " ".join(p for p in parts if p)
