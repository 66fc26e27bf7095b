"""The delivered text is the SDK's `output_text` (the final model output),
and non-text outputs become files beside the .md (issue 11, item 2)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.outputs import output_media, output_text
from reclaim_tui.core.sinks import DirectorySink

DEEP_RESEARCH = {
    "id": "int-1",
    "status": "completed",
    "steps": [
        {"type": "user_input", "content": [{"type": "text", "text": "Research SQLite WAL"}]},
        {"type": "thought", "summary": [{"type": "text", "text": "Planning the search"}]},
        {"type": "google_search_call", "arguments": {"queries": ["sqlite wal"]}},
        {"type": "google_search_result", "result": [{"url": "https://sqlite.org/wal.html"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "Interim notes."}]},
        {"type": "google_search_call", "arguments": {"queries": ["wal checkpoint"]}},
        {"type": "google_search_result", "result": [{"url": "https://sqlite.org/pragma.html"}]},
        {"type": "thought", "summary": [{"type": "text", "text": "Writing the report"}]},
        {
            "type": "model_output",
            "content": [
                {"type": "text", "text": "# Report\n"},
                {"type": "text", "text": "WAL lets readers run beside a writer."},
            ],
        },
    ],
}


def test_the_final_report_only() -> None:
    assert output_text(DEEP_RESEARCH) == "# Report\nWAL lets readers run beside a writer."


_item = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=5)}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio"]), "data": st.just("QQ==")}),
)
_step = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("model_output"), "content": st.lists(_item, max_size=3)}
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["thought", "user_input", "function_call", "google_search_call"])}
    ),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_step, max_size=7))
def test_output_text_is_the_sdks(steps: list[dict[str, Any]]) -> None:
    from google.genai._gaos.google_genai import _output_properties_from_steps

    sdk = _output_properties_from_steps(steps).get("output_text")
    assert output_text({"steps": steps}) == sdk


async def test_images_are_written_beside_the_md(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    raw = {
        "id": "int-2",
        "steps": [
            {"type": "user_input", "content": [{"type": "text", "text": "draw"}]},
            {
                "type": "model_output",
                "content": [
                    {"type": "text", "text": "Here it is."},
                    {
                        "type": "image",
                        "mime_type": "image/png",
                        "data": base64.b64encode(png).decode(),
                    },
                    {"type": "video", "mime_type": "video/mp4", "uri": "https://x/v.mp4"},
                ],
            },
        ],
    }
    assert [m.kind for m in output_media(raw)] == ["image", "video"]
    result = StoredResult("k1", "int-2", output_text(raw) or "", None, json.dumps(raw), 0.0)
    await DirectorySink(tmp_path).deliver("k1", result)
    assert (tmp_path / "k1.md").read_text() == "Here it is."
    assert (tmp_path / "k1.1.png").read_bytes() == png
    assert "https://x/v.mp4" in (tmp_path / "k1.media.txt").read_text()
