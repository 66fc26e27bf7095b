"""A tab key repaints the two tabs that change look and the underline, not
the whole tabs' bar (issue 39: a tab key's UI time). Textual's `active`
repaints the bar, its own lines and so every tab in the frame, though
only two tabs and the underline change. Counted: the bar's repaints; what
the screen shows is what Textual's own switch shows."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import Tabs

from reclaim_tui.tui.widgets.status_tabs import StatusTab, StatusTabs

from .conftest import Seeded
from .pilot_helpers import press, settle


def _count_repaints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tabs' widgets repainted from now on (the bar, a tab, the underline)."""
    repainted: list[str] = []
    real = Widget.refresh

    def refresh(self: Widget, *regions: Region, **kwargs: bool) -> Widget:
        if any(isinstance(node, Tabs) for node in self.ancestors_with_self):
            repainted.append(type(self).__name__)
        return real(self, *regions, **kwargs)

    monkeypatch.setattr(Widget, "refresh", refresh)
    return repainted


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_tab_key_repaints_two_tabs_and_the_underline_not_the_bar(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no new counts to relabel the tabs
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        repainted = _count_repaints(monkeypatch)
        for number in "274":
            await press(pilot, number)
        monkeypatch.undo()
        assert "StatusTabs" not in repainted
        assert sorted(set(repainted)) == ["KeptUnderline", "StatusTab"]
        assert tabs.active == "submitted"
        drawn = app.export_screenshot()
        # The same screen as after Textual's own switch, which repaints the bar.
        lit = [t.id for t in tabs.query(StatusTab) if t.lit]
        assert lit == ["submitted"]
        tabs.refresh()
        await settle(pilot)
        assert app.export_screenshot() == drawn
