"""Showing what the main screen's workers found (messages.py): a new window
of rows, the counts, a row's detail, the reclaim loop's passes, an operator
action's outcome. The screen's handlers call these; each redraws only what
its message changed."""

from __future__ import annotations

from textual.css.query import NoMatches

from reclaim_tui.core.ledger.console.views import SORT_COLUMNS
from reclaim_tui.core.models import PassReport
from reclaim_tui.tui.actions.port import MainPort
from reclaim_tui.tui.format import attention_text, inbox_text, shorten_error
from reclaim_tui.tui.messages import (
    ActionFinished,
    CountsChanged,
    DetailLoaded,
    RowsChanged,
    TickFailed,
    TickFinished,
)
from reclaim_tui.tui.screens.follow import FollowScreen
from reclaim_tui.tui.state import Cursor, Window
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.loop_bar import API_CALLS, NOT_TRIED, LoopBar
from reclaim_tui.tui.widgets.loop_log import LoopLog
from reclaim_tui.tui.widgets.status_tabs import StatusTabs

__all__ = [
    "action_finished",
    "counts_changed",
    "detail_loaded",
    "highlighted",
    "mark_tab",
    "rerender",
    "rows_changed",
    "show_bar",
    "tick_failed",
    "tick_finished",
]


def _follow_screens(screen: MainPort) -> list[FollowScreen]:
    """The follow view, shown or under help or the raw JSON."""
    return [s for s in screen.app.screen_stack if isinstance(s, FollowScreen)]


def load_detail(screen: MainPort, idem: str, left: str | None = None) -> None:
    screen.detail_for = idem
    screen.feed.load_detail(idem, left)


def rows_changed(screen: MainPort, event: RowsChanged) -> None:
    if event.counts is not None:
        counts_changed(screen, event.counts)
    for follow in _follow_screens(screen):
        follow.reload()  # the ledger changed: the followed job may have
    if event.view != screen.state.view():
        return  # the operator moved on before this page arrived
    mark_tab(screen)  # a tab key's tab, with its window
    if screen.tab_alone is not None:  # and not alone (actions/view.py)
        screen.tab_alone.cancel()
        screen.tab_alone = None
    table = screen.table
    before = table.current_row()
    screen.state.window = Window(event.page, event.view, event.offset)
    table.has_before, table.has_after = event.page.has_before, event.page.has_after
    rerender(screen, event.cursor)
    after = table.current_row()
    # The highlighted row left the tab (it moved to another status): the
    # cursor is on its neighbour now, and the detail says so.
    left, pane, now = None, screen.query_one(DetailPane), screen.config.clock.now()
    if event.cursor != "keep":
        pane.forget_left(now)  # the operator moved on
    elif before is not None and not table.has_row(before.idem):
        left = before.idem
    landing = event.landing
    if after is not None and (after != before or left):
        if landing is not None and landing[0] == after.idem and not left:
            # Read with the window: drawn in the window's frame.
            screen.detail_for = after.idem
            pane.show(landing[1], now)
        else:
            load_detail(screen, after.idem, left)
    elif after is None:
        note = (left, "the tab is empty now") if left else None
        pane.show(None, now, True, note)


def mark_tab(screen: MainPort) -> None:
    """Highlight the state's tab (no-op when it is)."""
    screen.query_one(StatusTabs).highlight(screen.state.tab)


def highlighted(screen: MainPort, idem: str | None) -> None:
    """A redraw highlights rows on its way to the cursor's: only the row
    under the cursor counts, and only when its detail is not on its way."""
    if idem is None or screen.feed.reader is None or idem != screen.table.current_idem():
        return
    if idem != screen.detail_for:
        load_detail(screen, idem)


#: The jobs column a sort orders by → the table column that shows it.
_SORTED_COLUMN = {jobs: table for table, (jobs, _, _) in reversed(SORT_COLUMNS.items())}


def rerender(screen: MainPort, cursor: Cursor = "keep") -> None:
    state, now = screen.state, screen.config.clock.now()
    sort = state.sort
    # The age column shows how long ago `state_since` was: oldest first is ↓.
    down = sort.descending != (sort.column == "state_since")
    screen.table.mark_sort(_SORTED_COLUMN.get(sort.column), "↓" if down else "↑")
    table = screen.table
    table.show_rows(state.window.page.rows, now, state.marks, screen.feed.dead, cursor)
    pane = screen.query_one(DetailPane)
    # The detail's ages move with the table's; but when the cursor now sits
    # on another row (a new tab or window), that row's detail is read next
    # and replaces this one: drawing the old row again is work thrown away.
    if pane.shown_idem is None or pane.shown_idem == table.current_idem():
        pane.redraw(now)
    for follow in _follow_screens(screen):
        follow.redraw()
    show_bar(screen)


def show_bar(screen: MainPort) -> None:
    s, bar, pace = screen.state, screen.bar, screen.pace
    bar.mode, bar.interval, bar.marks = pace.mode, pace.interval, len(s.marks)
    bar.sort, bar.filter = s.sort.label, s.filter_text
    bar.window = s.window_text()
    # The app's loop may report a pass while the screen is being torn
    # down (quit during a pass): there is no bar left to show it on. Found
    # by its id, which Textual looks up without a search: a query by type
    # matched every widget of the screen, at every window and every count.
    try:
        widget = screen.query_one("#loop-bar", LoopBar)
    except NoMatches:
        return
    widget.show(bar)


def counts_changed(screen: MainPort, event: CountsChanged) -> None:
    state, bar = screen.state, screen.bar
    state.counts, state.orphans = event.counts, event.orphans
    if event.attention is not None:
        bar.attention = attention_text(event.attention)
    if event.inbox is not None:
        now = screen.config.clock.now()
        bar.inbox = inbox_text(event.inbox, now)
        refused_at = event.inbox.refused_at
        bar.inbox_alarm = refused_at is not None and now - refused_at < 300
    screen.query_one(StatusTabs).show_counts({t.id: state.tab_count(t) for t in TABS})
    show_bar(screen)


def detail_loaded(screen: MainPort, event: DetailLoaded) -> None:
    if event.idem == screen.table.current_idem():
        screen.query_one(DetailPane).show(event.detail, screen.config.clock.now(), left=event.left)


def tick_finished(screen: MainPort, event: TickFinished) -> None:
    log, bar = screen.query_one(LoopLog), screen.bar
    log.tick(event.report, event.seconds, event.at)
    bar.last = f"last pass {event.seconds:.2f}s: {event.report.summary()}"
    bar.api = api_word(event.report, bar.api)
    down = event.report.unavailable
    if down:
        log.line(
            event.at,
            f"API unreachable or refusing us ({down[0]}): {shorten_error(down[1], 200)}",
            error=True,
        )
    screen.feed.watch(force=True)


def api_word(report: PassReport, shown: str) -> str:
    """The bar's word on the API after a pass (`shown`: the word before it)."""
    down, deferred = report.unavailable, report.counts["deferred"]
    if down:
        # A connection that cannot be made is the API unreachable, not degraded.
        return f"unreachable ({down[0]})" if down[0] == "transport" else f"unavailable ({down[0]})"
    if deferred:
        return f"degraded ({deferred} deferred)"
    if not any(report.counts[k] for k in API_CALLS):
        return shown or NOT_TRIED  # a pass with nothing to send or poll says nothing of it
    return "ok"


def tick_failed(screen: MainPort, event: TickFailed) -> None:
    screen.query_one(LoopLog).line(event.at, f"pass failed: {event.error}", error=True)
    screen.bar.last = "last pass failed (see log)"


def action_finished(screen: MainPort, event: ActionFinished) -> None:
    screen.notify(event.text, severity=event.severity)
    screen.query_one(LoopLog).line(screen.config.clock.now(), f"console: {event.text}")
    screen.feed.watch(force=True)
