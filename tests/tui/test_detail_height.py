"""A cursor key lays nothing out for the detail (issue 39: the console's
cursor keys at p99). Rows' details differ by a few lines; a body of another
height made Textual lay the whole screen out again (the body, then the
pane's scrollable size), the largest part of the slowest cursor keys on the
UI thread. The body keeps its height while the next row's detail fits it
with at most half the pane left blank. Counted, never timed."""

from __future__ import annotations

import pytest
from textual.widget import Widget

from reclaim_tui.tui.widgets.detail_pane import DetailPane, kept_height

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


def _count_layouts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The detail's widgets that asked for a layout, in order."""
    asked: list[str] = []
    real = Widget.refresh

    def refresh(self: Widget, *regions: object, **kwargs: object) -> Widget:
        if kwargs.get("layout") and (isinstance(self, DetailPane) or self.id == "detail-body"):
            asked.append(self.id or type(self).__name__)
        return real(self, *regions, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Widget, "refresh", refresh)
    return asked


async def test_moving_between_rows_lays_the_detail_out_only_when_it_outgrows_its_body(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _count_layouts(monkeypatch)
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger: only the keys redraw
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table, pane = app.table, app.main.query_one(DetailPane)
        body = pane.query_one("#detail-body")
        lengths = set()
        for _ in range(table.row_count - 1):
            await press(pilot, "down")
            await settle(pilot)
            assert pane.shown_idem == table.current_idem()
            lengths.add(str(body.render()).rstrip("\n").count("\n"))
        assert len(lengths) >= 3  # the rows' details differ in length
        asked.clear()
        for _ in range(2):  # up and down again over rows of several lengths
            for key in ["up"] * (table.row_count - 1) + ["down"] * (table.row_count - 1):
                await press(pilot, key)
                await settle(pilot)
                assert pane.shown_idem == table.current_idem()
        assert asked == []


def test_the_kept_height_fits_the_detail_and_leaves_at_most_a_pane_blank() -> None:
    room = 14
    for shown in range(0, 60):
        for height in range(1, 60):
            kept = kept_height(height, shown, room)
            assert kept >= max(height, room)  # all of it, and a short one fills the pane
            assert kept - max(height, room) <= room
            if max(height, room) <= shown <= max(height, room) + room:
                assert kept == shown  # nothing to lay out
