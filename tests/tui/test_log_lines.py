"""A loop-log line lays nothing out (issue 39: the console's keys at p99).
Each line a busy loop wrote grew the log's scrollable size, and Textual
laid the whole screen out again for it, in the frames of the keys pressed
meanwhile. Counted: the layouts the screen is asked for, never a time."""

from __future__ import annotations

from typing import Any

import pytest
from textual import messages
from textual.geometry import Region
from textual.screen import Screen
from textual.scrollbar import ScrollBar

from reclaim_tui.tui.widgets.loop_log import LoopLog

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


def _count_layouts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The widgets a layout of the screen was asked for, in order. Another
    widget's scrollbar is left out: the table's and the detail's move on their
    own timers (the ages redrawn every second), not on a log line; under a
    loaded CI one such layout landed in these frames once in three runs."""
    asked: list[str] = []
    real = Screen.post_message

    def post_message(self: Screen[Any], message: Any) -> bool:
        if isinstance(message, messages.Layout):
            widget = message.widget
            if not (isinstance(widget, ScrollBar) and not isinstance(widget.parent, LoopLog)):
                asked.append(f"{type(widget).__name__}#{widget.id}")
        return real(self, message)

    monkeypatch.setattr(Screen, "post_message", post_message)
    return asked


def _shown(log: LoopLog) -> list[str]:
    region = log.scrollable_content_region
    lines = log.render_lines(Region(0, 0, *log.outer_size))
    top, left = region.y - log.region.y, region.x - log.region.x
    shown = lines[top : top + region.height]
    return [line.text[left : left + region.width].strip() for line in shown]


async def test_a_log_line_lays_nothing_out_and_shows_at_the_bottom(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger: only the log changes
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(LoopLog)
        height = log.container_size.height
        for n in range(height + 1):  # more than it shows: its scrollbar comes
            log.line(seeded.clock.now(), f"line {n}")
        await settle(pilot)
        await pilot.pause()
        assert log.show_vertical_scrollbar
        asked = _count_layouts(monkeypatch)
        for n in range(height + 1, height + 31):
            log.line(seeded.clock.now(), f"line {n}")
            await pilot.pause()
            assert _shown(log)[-1].endswith(f"line {n}")  # the newest, at the bottom
        await settle(pilot)
        assert asked == []
        bar = log.vertical_scrollbar
        assert (bar.window_virtual_size, bar.window_size) == (len(log.lines), height)
        assert log.scroll_y == log.max_scroll_y == len(log.lines) - height


async def test_the_log_wraps_its_lines_at_its_width_and_again_at_a_new_one(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(LoopLog)
        words = " ".join(f"word{n}" for n in range(60))
        log.line(seeded.clock.now(), words)
        await settle(pilot)
        await pilot.pause()
        width = log.scrollable_content_region.width
        assert max(strip.cell_length for strip in log.lines) <= width
        assert " ".join(s.text.strip() for s in log.lines).endswith("word58 word59")
        await pilot.resize_terminal(80, 24)
        await press(pilot, "escape")
        await pilot.pause()
        narrow = log.scrollable_content_region.width
        assert 0 < narrow < width
        assert max(strip.cell_length for strip in log.lines) <= narrow
        assert "word59" in _shown(log)[-1]
