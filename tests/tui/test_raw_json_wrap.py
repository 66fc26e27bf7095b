"""The raw JSON view (`v`) wraps a long string instead of cutting it at the
screen's edge (issue 25, 8: "the raw JSON view cuts long strings with no
wrap"): every character of the stored interaction can be read on screen."""

from __future__ import annotations

import json

from textual.app import App

from reclaim_tui.tui.screens.raw_json import RawJsonScreen

TAIL = "THE-CAUSE-IS-HERE"


class _Host(App[None]):
    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def on_mount(self) -> None:
        self.push_screen(RawJsonScreen("job-1", self._text))


async def test_a_long_string_is_wrapped_not_cut() -> None:
    text = json.dumps({"id": "v1_x", "outputs": [{"text": "word " * 60 + TAIL}]}, indent=2)
    app = _Host(text)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, RawJsonScreen)
        body = app.screen.query_one("#raw-body")
        scroll = app.screen.query_one("#raw-scroll")
        assert body.size.width <= scroll.scrollable_content_region.width
        assert TAIL in app.export_screenshot().replace("&#160;", " ")


async def test_a_long_word_without_spaces_is_folded() -> None:
    token = "A" * 200 + TAIL  # base64 data, a URL: no space to wrap at
    app = _Host(json.dumps({"id": "v1_x", "data": token}, indent=2))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = app.screen.query_one("#raw-body")
        region = app.screen.query_one("#raw-scroll").scrollable_content_region
        assert body.size.width <= region.width
        assert TAIL in app.export_screenshot().replace("&#160;", " ")
