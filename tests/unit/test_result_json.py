"""A result's stored JSON is `json.dumps(raw, sort_keys=True,
ensure_ascii=False)` character for character, made without the encoder's
copies of its long strings (issue 40 point 14). Counted: tracemalloc."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from reclaim_tui.core import result_json
from reclaim_tui.core.result_json import sorted_json

CASES: list[Any] = [
    {"b": "x" * 10, "a": ['yy\n"' * 3, {"z": "\u2028é😀" * 4, "k": 1.5, "n": None, "t": True}]},
    "abcdef",
    ["abc", "\x00\x01ab\\", ("tuple", "ofs")],
    {"s": "\ud800abcd", "\x00nonce:0\x00": "\\u0000abcd:0\\u0000"},
    {"id": "i", "steps": [{"content": [{"text": "same"}]}], "output_text": "same"},
    {},
    [],
    {"a": "ab", "n": 10**30, "f": -0.0},
]


@pytest.mark.parametrize("value", CASES)
@pytest.mark.parametrize("long", [1, 4, 1 << 16])
def test_the_text_is_json_dumps_text(
    value: Any, long: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(result_json, "LONG", long)
    assert sorted_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("text", ["7" * 4_000_000, "line\n" * 800_000])
def test_a_long_text_twice_is_held_once_more_not_four_times(text: str) -> None:
    raw = {"id": "i", "steps": [{"type": "model_output", "content": [{"text": text}]}]}
    raw["output_text"] = text
    tracemalloc.start()
    try:
        made = sorted_json(raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert made == json.dumps(raw, sort_keys=True, ensure_ascii=False)
    # The JSON made (the text twice), and for text JSON escapes one encoded
    # copy; json.dumps holds each occurrence encoded, then the joined text.
    escaped = len(json.dumps(text)) if "\n" in text else 0
    assert peak < len(made) * 1.05 + escaped + 100_000


@pytest.mark.parametrize(
    "raw",
    [
        {"id": "i", "output_text": "t" * (1 << 17), "steps": [{"text": "t" * (1 << 17)}]},
        {"id": "i", "output_text": "", "output_image": {"data": "QUJD" * 20_000, "n": None}},
        {"id": "i", "output_text": "short\n", "status": "completed"},
    ],
)
def test_a_results_stored_json_is_unchanged(raw: dict[str, Any]) -> None:
    from reclaim_tui.core.models import RemoteInteraction, RemoteState

    result = RemoteInteraction("i", RemoteState.COMPLETED, "completed", raw["output_text"], raw=raw)
    assert result.raw_json() == json.dumps(raw, sort_keys=True, ensure_ascii=False)


@pytest.mark.parametrize("value", [*CASES, {"u": {"total_tokens": 7, "é": 2.5}}, {3: "x", 1: None}])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_acyclic_encoder_writes_json_dumps_text(value: Any, ascii_only: bool) -> None:
    encode = result_json.acyclic_encoder(ensure_ascii=ascii_only)
    assert encode(value) == json.dumps(value, sort_keys=True, ensure_ascii=ascii_only)
    with pytest.raises(TypeError):
        encode({"a": object()})
    assert encode(value) == json.dumps(value, sort_keys=True, ensure_ascii=ascii_only)
