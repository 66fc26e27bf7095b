"""A key that brings a new window (a tab, the last or first window) draws
the window and the detail of the row its cursor lands on in one frame: the
detail is read with the window, not by a worker of its own after the
window's frame (issue 39: the keys that cost most, counted; nothing here
times anything)."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.screen import Screen

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.feed import LedgerFeed
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.detail_pane import DetailPane

from .conftest import Seeded
from .pilot_helpers import press, settle

#: One frame as drawn: (windows drawn so far, the cursor's row, the detail's row).
Frame = tuple[int, str | None, str | None]


def _record_frames(app: ReclaimApp, monkeypatch: pytest.MonkeyPatch) -> list[Frame]:
    frames: list[Frame] = []
    real = App._display

    def display(self: App[None], screen: Screen[object], renderable: object) -> None:
        pane = app.main.query_one(DetailPane)
        frames.append((app.table.renders, app.table.current_idem(), pane.shown_idem))
        real(self, screen, renderable)  # type: ignore[arg-type]

    monkeypatch.setattr(App, "_display", display)
    return frames


def _record_detail_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = LedgerFeed.load_detail

    def load_detail(self: LedgerFeed, idem: str, left: str | None = None) -> object:
        read.append(idem)
        return real(self, idem, left)

    monkeypatch.setattr(LedgerFeed, "load_detail", load_detail)
    return read


@pytest.mark.parametrize("key", ["tab", "G", "g"])
async def test_a_new_window_and_its_row_s_detail_are_drawn_in_one_frame(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger between the key and its frames
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        if key == "g":
            await press(pilot, "G")
        pane, table = app.main.query_one(DetailPane), app.table
        before, renders = table.current_idem(), table.renders
        frames = _record_frames(app, monkeypatch)
        reads = _record_detail_reads(monkeypatch)
        if key == "tab":
            state = app.main.state
            tab = next(n for n in range(1, len(TABS)) if state.tab_count(TABS[n]) > 0)
            await press(pilot, str(tab + 1))
        else:
            await press(pilot, key)
        after = table.current_idem()
        assert after is not None and after != before
        assert pane.shown_idem == after
        with_window = [f for f in frames if f[0] > renders]
        assert with_window, frames
        # The first frame that shows the new window shows its row's detail too.
        assert with_window[0][1:] == (after, after), frames
        assert reads == []  # no detail read of its own
