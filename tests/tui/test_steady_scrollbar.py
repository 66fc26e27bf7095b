"""A key whose window leaves the table's scrollbar as it was does not draw
the scrollbar again (issue 39: a tab key's UI time). Textual updates a
scroll view's scrollbars at every layout of the screen, and a tab key lays
the screen out (the tabs relabelled by new counts, a detail of another
height): the table's scrollbar was drawn anew with its thumb where it was.
Counted: the scrollbar's draws; a thumb that moves, or a new theme, still
draws it, as Textual draws it."""

from __future__ import annotations

import pytest
from rich.console import RenderableType
from textual.scrollbar import ScrollBar

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.status_tabs import StatusTabs

from .conftest import Seeded
from .pilot_helpers import press, settle
from .test_paging import add_rows


def _count_table_bar_draws(app: ReclaimApp, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The table's vertical scrollbar's draws from now on (its thumb's place at each)."""
    drawn: list[float] = []
    real = ScrollBar.render

    def render(self: ScrollBar) -> RenderableType:
        if self.parent is app.table and self.vertical:
            drawn.append(self.position)
        return real(self)

    monkeypatch.setattr(ScrollBar, "render", render)
    return drawn


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_a_tab_key_that_leaves_the_thumb_draws_no_scrollbar(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    await add_rows(seeded, 250)  # every tab below holds more rows than the screen
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table, tabs = app.table, app.main.query_one(StatusTabs)
        assert table.show_vertical_scrollbar
        shape = (table.virtual_size, table.scroll_y)
        layouts = []
        drawn = _count_table_bar_draws(app, monkeypatch)
        for grown, number in enumerate("2121", 1):
            # New counts relabel the tabs: the screen is laid out again.
            tabs.show_counts({t.id: 10**grown * (n + 1) for n, t in enumerate(TABS)})
            before = tabs.region, tabs.tabs_by_id["all"].region
            await press(pilot, number)
            layouts.append(before != (tabs.region, tabs.tabs_by_id["all"].region))
            assert (table.virtual_size, table.scroll_y) == shape  # the thumb stayed
        assert all(layouts)
        assert drawn == []
        # A thumb that moves is drawn where it goes.
        await press(pilot, "pagedown")
        assert table.scroll_y > 0
        assert drawn and drawn[-1] == table.vertical_scrollbar.position > 0


async def test_a_new_theme_draws_the_scrollbar_in_its_colours(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    await add_rows(seeded, 250)
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        drawn = _count_table_bar_draws(app, monkeypatch)
        bar = app.table.vertical_scrollbar
        before = bar.render_line(3)
        app.theme = "textual-light"
        await settle(pilot)
        assert drawn
        assert bar.render_line(3) != before
