"""Token usage of an interaction, with every field of google-genai's `Usage`.

Counts are the emulator's (one token per word; a thought costs 16 plus its
summary; a tool result 20 plus its words; an image 1290); which parts go to
which field follows the SDK's docstrings: `total_cached_tokens` is the part
of the prompt that was cached (the conversation before this turn, which
`previous_interaction_id` lets the API cache), `total_tool_use_tokens` the
tool results fed back, `grounding_tool_count` the searches run, and
`total_tokens` everything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reclaim_tui.emulator.content import IMAGE_TOKENS, tokens

__all__ = ["Counts", "scaled", "usage"]

_THOUGHT_TOKENS = 16
_TOOL_RESULT_TOKENS = 20


@dataclass
class Counts:
    text_out: int = 0
    image_out: int = 0
    thought: int = 0
    tool_use: int = 0
    searches: int = 0

    def add(self, step: Mapping[str, Any]) -> None:
        kind = step.get("type")
        if kind == "model_output":
            for block in step.get("content") or ():
                if block.get("type") == "text":
                    self.text_out += tokens(str(block.get("text", "")))
                elif block.get("type") in ("image", "audio", "video"):
                    self.image_out += IMAGE_TOKENS
        elif kind == "thought":
            summary = " ".join(str(s.get("text", "")) for s in step.get("summary") or ())
            self.thought += _THOUGHT_TOKENS + tokens(summary)
        elif kind == "function_call":
            self.text_out += 1 + tokens(json.dumps(step.get("arguments") or {}))
        elif kind == "google_search_call":
            self.searches += len((step.get("arguments") or {}).get("queries") or ())
        elif kind in ("google_search_result", "url_context_result"):
            self.tool_use += _TOOL_RESULT_TOKENS + tokens(json.dumps(step.get("result")))


def _by_modality(**counts: int) -> list[dict[str, Any]]:
    return [{"modality": name, "tokens": n} for name, n in counts.items() if n]


def usage(
    steps: Iterable[Mapping[str, Any]],
    own_input: int,
    cached: int,
    *,
    research: bool = False,
    streamed: bool = False,
) -> dict[str, Any]:
    """Usage of a turn whose prompt is `own_input` tokens after `cached` tokens of history.

    As recorded real answers have it: no
    `initial_input_tokens`; no `tool_use_tokens_by_modality` for Deep Research
    (`research`); no `output_tokens_by_modality` in a streamed turn's usage,
    nor for text in any (recorded/vercel_ai/); `grounding_tool_count` only
    for a research agent.
    """
    counts = Counts()
    for step in steps:
        counts.add(step)
    total_input = own_input + cached
    output = counts.text_out + counts.image_out
    body: dict[str, Any] = {
        "total_input_tokens": total_input,
        "total_output_tokens": output,
        "total_thought_tokens": counts.thought,
        "total_cached_tokens": cached,
        "total_tool_use_tokens": counts.tool_use,
        "total_tokens": total_input + output + counts.thought + counts.tool_use,
    }
    breakdowns = {
        "input_tokens_by_modality": _by_modality(text=total_input),
        # Recorded real answers list no text here: a text answer has no
        # breakdown, a video answer lists its video tokens only.
        "output_tokens_by_modality": _by_modality(image=counts.image_out),
        "cached_tokens_by_modality": _by_modality(text=cached),
        "tool_use_tokens_by_modality": _by_modality(text=counts.tool_use),
    }
    if research:
        del breakdowns["tool_use_tokens_by_modality"]
    if streamed:
        del breakdowns["output_tokens_by_modality"]
    body.update((name, items) for name, items in breakdowns.items() if items)
    # A recorded real google_search turn of a model had no count of its
    # searches; a research agent's usage keeps the SDK's field.
    if counts.searches and research:
        body["grounding_tool_count"] = [{"type": "google_search", "count": counts.searches}]
    return body


def scaled(body: Mapping[str, Any], factor: float) -> dict[str, Any]:
    """`body` with every token count times `factor` (searches left as they
    are). The demo's prompts and answers are a few dozen words where real
    jobs read and write thousands of tokens: scaled, its costs look like a
    real ledger's (EmulatorConfig.usage_scale)."""
    if factor == 1:
        return dict(body)
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name.endswith("_tokens") and isinstance(value, int):
            out[name] = round(value * factor)
        elif name.endswith("_by_modality") and isinstance(value, list):
            out[name] = [{**item, "tokens": round(item["tokens"] * factor)} for item in value]
        else:
            out[name] = value
    return out
