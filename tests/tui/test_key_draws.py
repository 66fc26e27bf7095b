"""What one key draws, counted (issue 39: the keys that cost most, tab, page
and cursor, on the UI thread; no test here times anything).

A key that brings the cursor onto another row draws that row's detail once:
not the old row's detail again first (its ages, on their way out), and the
tabs' bar changes its active tab without searching the widget tree. The
detail shown once the keys stop is the row under the cursor's."""

from __future__ import annotations

import pytest
from textual.css.query import DOMQuery
from textual.widget import Widget
from textual.widgets._tabs import Underline

from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets import detail_pane
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.status_tabs import StatusTab, StatusTabs

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


def _drawn_active(tabs: StatusTabs) -> list[str | None]:
    """The tabs drawn as the active one (lit, or by Textual's class)."""
    return [t.id for t in tabs.query(StatusTab) if t.lit or t.has_class("-active")]


def _count_details(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rows whose detail is drawn, in order."""
    drawn: list[str] = []
    real = detail_pane.render_detail

    def counting(detail: Detail, now: float, prices: PriceTable | None = None) -> object:
        drawn.append(detail.row.idem)
        return real(detail, now, prices)

    monkeypatch.setattr(detail_pane, "render_detail", counting)
    return drawn


def _unwatched(seeded: Seeded) -> ReclaimApp:
    """The console without its once-a-second look at the ledger (which
    redraws the detail shown for its ages, whenever it comes)."""
    app = seeded.app()
    app.config.watch_every = 3600.0
    return app


def _record_tab_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The selectors the tabs search their widgets with, from now on."""
    searched: list[str] = []
    real_query, real_one = Widget.query, Widget.query_one

    def query(self: Widget, selector: object = None) -> DOMQuery[Widget]:
        if isinstance(self, StatusTabs):
            searched.append(str(selector))
        return real_query(self, selector)  # type: ignore[arg-type]

    def query_one(self: Widget, selector: object, expect_type: object = None) -> Widget:
        if isinstance(self, StatusTabs):
            searched.append(str(selector))
        return real_one(self, selector, expect_type)  # type: ignore[arg-type, call-overload, no-any-return]

    monkeypatch.setattr(Widget, "query", query)
    monkeypatch.setattr(Widget, "query_one", query_one)
    return searched


@pytest.mark.parametrize("key", ["tab", "G", "g"])
async def test_a_key_onto_another_row_draws_only_that_row_s_detail(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    drawn = _count_details(monkeypatch)
    app = _unwatched(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane, table = app.main.query_one(DetailPane), app.table
        if key == "g":  # from the bottom back to the top
            await press(pilot, "G")
        before = pane.shown_idem
        assert before == table.current_idem() is not None
        # Every age moves: a redraw of the old row would draw something new.
        seeded.clock.advance(7.0)
        drawn.clear()
        if key == "tab":
            state = app.main.state
            tab = next(n for n in range(1, len(TABS)) if state.tab_count(TABS[n]) > 0)
            await press(pilot, str(tab + 1))
        else:
            await press(pilot, key)
        after = table.current_idem()
        assert after is not None and after != before
        assert pane.shown_idem == after  # the row under the cursor is the one shown
        assert drawn == [after]


async def test_a_cursor_move_draws_the_new_row_s_detail_once(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn = _count_details(monkeypatch)
    app = _unwatched(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.table
        drawn.clear()
        await press(pilot, "down")
        assert drawn == [table.current_idem()]
        drawn.clear()
        await press(pilot, "down", "down", "up")
        # The detail once the keys stop: the row under the cursor's.
        assert app.main.query_one(DetailPane).shown_idem == table.current_idem()
        assert drawn[-1] == table.current_idem()


async def test_a_tab_switch_searches_no_widgets_in_the_tabs(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        searched = _record_tab_searches(monkeypatch)
        for number in "274":
            await press(pilot, number)
        monkeypatch.undo()
        assert searched == []
        tabs = app.main.query_one(StatusTabs)
        assert tabs.active == "submitted"
        assert _drawn_active(tabs) == ["submitted"]


async def test_counts_that_change_mid_switch_search_no_widgets_either(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New counts relabel the tabs (every second, at any key): the underline
    goes under the active tab again without a search, once laid out."""
    app = _unwatched(seeded)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        searched = _record_tab_searches(monkeypatch)
        for grown, number in enumerate("274", 1):
            tabs.show_counts({t.id: 10**grown * (n + 1) for n, t in enumerate(TABS)})
            await press(pilot, number)
        await pilot.resize_terminal(SIZE[0] - 7, SIZE[1])
        await settle(pilot)
        monkeypatch.undo()
        assert searched == []
        assert tabs.active == "submitted"
        active = tabs.tabs_by_id["submitted"].region
        underline = app.main.query_one(Underline)
        assert (underline.highlight_start, underline.highlight_end) == (
            active.x - tabs.region.x + 1,
            active.right - tabs.region.x - 1,
        )


async def test_a_burst_of_tab_and_cursor_keys_ends_on_what_the_screen_shows(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # No settling between the keys: each replaces the read before it.
        await pilot.press("2", "down", "4", "down", "down", "1", "G", "up", "7", "4", "down")
        await settle(pilot)
        tabs, table = app.main.query_one(StatusTabs), app.table
        assert tabs.active == app.main.state.tab == "submitted"
        assert _drawn_active(tabs) == ["submitted"]
        active = tabs.tabs_by_id["submitted"].region
        underline = app.main.query_one(Underline)
        assert (underline.highlight_start, underline.highlight_end) == (
            active.x - tabs.region.x + 1,
            active.right - tabs.region.x - 1,
        )
        pane = app.main.query_one(DetailPane)
        assert table.current_idem() is not None
        assert pane.shown_idem == table.current_idem()
        assert table.current_idem() in str(pane.query_one("#detail-body").render())
