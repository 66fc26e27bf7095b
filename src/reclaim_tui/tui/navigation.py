"""The operator's view keys, mixed into the app: tabs, filter, sort, paging,
detail, marks clearing, loop pace. No I/O: each one changes ConsoleState and
asks the app's workers for a new window."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Input

from reclaim_tui.core.queries import SORTS
from reclaim_tui.tui.keymap import TABS
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.filter_bar import FilterBar
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.loop_bar import LoopBar
from reclaim_tui.tui.widgets.status_tabs import StatusTabs

if TYPE_CHECKING:
    from reclaim_tui.tui.app import ReclaimApp

__all__ = ["ViewActions"]


class ViewActions:
    """Mixin for ReclaimApp."""

    def on_ledger_table_page_requested(self: ReclaimApp, event: LedgerTable.PageRequested) -> None:
        cursor = {"after": "top", "before": "bottom", "last": "bottom"}.get(event.direction, "top")
        self.load_page(event.direction, cursor=cursor)

    def on_ledger_table_sort_requested(self: ReclaimApp, event: LedgerTable.SortRequested) -> None:
        first = 0 if event.column == "age" else 2
        current = self.state.sort_index
        self.set_sort(first + 1 if current == first else first)

    def on_tabs_tab_activated(self: ReclaimApp, event: StatusTabs.TabActivated) -> None:
        # (Named handlers, not @on: a plain mixin's @on methods are never collected.)
        if not isinstance(event.tabs, StatusTabs):
            return  # the submit screen's TabbedContent
        if event.tab.id in {t.id for t in TABS} and event.tab.id != self.state.tab:
            self.action_show_tab(event.tab.id)

    def on_input_submitted(self: ReclaimApp, event: Input.Submitted) -> None:
        if event.input.id != "filter":
            return
        try:
            self.state.set_filter(event.value)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one(FilterBar).close()
        self.table.focus()
        self.load_page("first", cursor="top")

    # -- view actions ------------------------------------------------------------------------
    def show_bar(self: ReclaimApp) -> None:
        s = self.state
        self.bar.mode, self.bar.interval = self.pace.mode, self.pace.interval
        self.bar.marks = len(s.marks)
        self.bar.sort, self.bar.filter = SORTS[s.sort_index].label, s.filter_text
        self.bar.window = s.window_text()
        self.query_one(LoopBar).show(self.bar)

    def action_show_tab(self: ReclaimApp, tab: str) -> None:
        self.state.tab = tab
        self.query_one(StatusTabs).active = tab
        self.load_page("first", cursor="top")

    def set_sort(self: ReclaimApp, index: int) -> None:
        self.state.sort_index = index
        self.load_page("first", cursor="top")

    def action_cycle_sort(self: ReclaimApp) -> None:
        self.set_sort((self.state.sort_index + 1) % len(SORTS))

    def action_first_page(self: ReclaimApp) -> None:
        self.load_page("first", cursor="top")

    def action_last_page(self: ReclaimApp) -> None:
        self.load_page("last", cursor="bottom")

    def action_filter(self: ReclaimApp) -> None:
        self.query_one(FilterBar).open(self.state.filter_text)

    def action_toggle_detail(self: ReclaimApp) -> None:
        if self.screen.maximized is not None:
            self.screen.minimize()
            self.table.focus()
        else:
            pane = self.query_one(DetailPane)
            self.screen.maximize(pane, container=False)
            pane.focus()

    def action_clear(self: ReclaimApp) -> None:
        bar = self.query_one(FilterBar)
        if bar.has_class("-open"):
            bar.close()
            self.table.focus()
        elif self.screen.maximized is not None:
            self.action_toggle_detail()
        elif self.state.marks:
            self.state.marks.clear()
            self.rerender()
        elif self.state.filter_text:
            self.state.set_filter("")
            self.load_page("first", cursor="top")

    def action_refresh(self: ReclaimApp) -> None:
        self.watch_ledger(force=True)

    def action_help(self: ReclaimApp) -> None:
        self.push_screen(HelpScreen(readonly=self.host is None))

    def action_toggle_pause(self: ReclaimApp) -> None:
        paused = self.pace.toggle_pause()
        self.notify("reclaim loop paused" if paused else "reclaim loop resumed")
        self.show_bar()
        self.kick_loop()

    def action_slower(self: ReclaimApp) -> None:
        self.notify(f"a pass every {self.pace.step_interval(longer=True):g}s")
        self.show_bar()
        self.kick_loop()

    def action_faster(self: ReclaimApp) -> None:
        self.notify(f"a pass every {self.pace.step_interval(longer=False):g}s")
        self.show_bar()
        self.kick_loop()
