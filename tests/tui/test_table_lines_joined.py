"""A table line is built with its segments already joined: neighbours of
one style are one segment from the start, and no pass over the line joins
them afterwards (issue 39: a new window draws every line on screen afresh,
and that pass was a part of each; counted, nothing here is timed)."""

from __future__ import annotations

import pytest
from textual.strip import Strip

from reclaim_tui.tui.widgets import line_rows

from .conftest import Seeded
from .pilot_helpers import press, settle


async def test_a_new_window_s_lines_need_no_joining_pass(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        drawing, passes, lines = [False], [0], []
        real_line, real_simplify = line_rows.LineRows.render_line, Strip.simplify

        def render_line(self: line_rows.LineRows, y: int) -> Strip:
            drawing[0] = True
            try:
                strip = real_line(self, y)
            finally:
                drawing[0] = False
            lines.append(strip)
            return strip

        def simplify(self: Strip) -> Strip:
            passes[0] += drawing[0]
            return real_simplify(self)

        monkeypatch.setattr(line_rows.LineRows, "render_line", render_line)
        monkeypatch.setattr(Strip, "simplify", simplify)
        app.table._lines.clear()  # every line drawn afresh, none from the table's keep
        await press(pilot, "G")
        monkeypatch.undo()
        assert len(lines) >= app.table.row_count > 1
        assert passes == [0]
        # … and as few segments as the joining pass would leave.
        for strip in lines:
            assert list(strip) == list(Strip(list(strip)).simplify())
            assert strip.cell_length == app.table.size.width
