"""Moving through the ledger: the tabs, the filter (`/`), the sorts, the command
line (`:`), the panels and the full-screen detail. No I/O: each sets the
screen's state, then asks its feed for a new window."""

from __future__ import annotations

import asyncio
from functools import partial

from textual.widgets import Input

from reclaim_tui.config import console_settings_path
from reclaim_tui.core.ledger.console.views import SORTS
from reclaim_tui.tui.actions import tools, updates
from reclaim_tui.tui.actions.port import MainPort
from reclaim_tui.tui.screens.fleet import FleetScreen
from reclaim_tui.tui.widgets.command_line import (
    Command,
    CommandLine,
    column_names,
    saved_view,
    sort_arguments,
)
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.filter_bar import FilterBar

__all__ = [
    "clear",
    "cycle_sort",
    "enter_command",
    "enter_filter",
    "open_command_line",
    "open_filter",
    "open_line",
    "show_panels",
    "show_tab",
    "sort_by",
    "toggle_detail",
    "toggle_panel",
    "width_detail",
]


def first_window(screen: MainPort) -> None:
    """The view changed: its first window, the cursor on top."""
    screen.feed.load_page("first", cursor="top")


#: Seconds a tab's window may take before the tab is highlighted without it.
TAB_ALONE_AFTER = 0.1


def show_tab(screen: MainPort, tab: str) -> None:
    """The tab's first window; the tab is highlighted when its window is
    shown, in the same frame (updates.rows_changed): highlighted at once,
    it took a frame of its own while the window was read, and for that
    moment the tabs named rows the table did not show. A read slower than a
    glance (a filter's scan) highlights the tab alone first, and so does
    one that fails."""
    screen.state.tab = tab
    first_window(screen)
    # The event loop's own timer, cancelled when the window lands
    # (updates.rows_changed): a Textual timer is a task a key, woken later
    # for nothing in nearly every case.
    if screen.tab_alone is not None:
        screen.tab_alone.cancel()
    loop = asyncio.get_running_loop()
    mark = partial(updates.mark_tab, screen)
    screen.tab_alone = loop.call_later(TAB_ALONE_AFTER, screen.call_later, mark)


def cycle_sort(screen: MainPort) -> None:
    """`t`: the next of the built-in sorts (it replaces a column's sort)."""
    state = screen.state
    state.sort_index, state.column_sort = (state.sort_index + 1) % len(SORTS), None
    first_window(screen)


def sort_by(screen: MainPort, column: str, descending: bool | None = None) -> None:
    """Sort by any column (shift+letter again: the other way; `:sort`)."""
    try:
        screen.state.sort_by(column, descending)
    except ValueError as exc:
        screen.notify(str(exc), severity="error")
        return
    first_window(screen)


def open_filter(screen: MainPort) -> None:
    screen.query_one(FilterBar).open(screen.state.filter_text)


def enter_filter(screen: MainPort, text: str) -> None:
    try:
        tools.prices_for_filter(screen, text)
        screen.state.set_filter(text)
    except ValueError as exc:
        screen.notify(str(exc), severity="error")
        return
    screen.query_one(FilterBar).close()
    screen.table.focus()
    first_window(screen)


def open_command_line(screen: MainPort) -> None:
    screen.query_one(FilterBar).close()
    screen.query_one(CommandLine).open()


def open_line(screen: MainPort, key: str) -> Input | None:
    """Open the line `key` opens (`/` the filter, `:` the command line) and
    return its input, for the keys typed after it (tui/typeahead.py)."""
    if key == "slash":
        open_filter(screen)
        return screen.query_one(FilterBar)
    if key == "colon":
        open_command_line(screen)
        return screen.query_one(CommandLine).input
    return None


def toggle_detail(screen: MainPort) -> None:
    """enter: the detail full screen, or back to the table."""
    if screen.maximized is not None:
        screen.minimize()
        screen.table.focus()
    else:
        pane = screen.query_one(DetailPane)
        screen.maximize(pane, container=False)
        pane.focus()


def clear(screen: MainPort) -> None:
    """esc: close the innermost thing open (a line, the full detail), else
    drop the marks, else the filter."""
    bar, line, state = screen.query_one(FilterBar), screen.query_one(CommandLine), screen.state
    if line.is_open:
        line.close()
        screen.table.focus()
    elif bar.has_class("-open"):
        bar.close()
        screen.table.focus()
    elif screen.maximized is not None:
        toggle_detail(screen)
    elif state.marks:
        state.marks.clear()
        updates.rerender(screen)
    elif state.filter_text:
        state.set_filter("")
        first_window(screen)


def enter_command(screen: MainPort, command: Command) -> None:
    """A line entered on the command line (`:`); a bad one is said on the line."""
    line, state = screen.query_one(CommandLine), screen.state
    try:
        if command.verb == "view":
            where = console_settings_path()
            command = Command("filter", saved_view(state.views, command.argument, where))
        if command.verb == "model":
            state.set_model(command.argument)
            first_window(screen)
        elif command.verb == "filter":
            tools.prices_for_filter(screen, command.argument)
            state.set_filter(command.argument)
            first_window(screen)
    except ValueError as exc:
        line.say(str(exc))
        return
    line.close()
    screen.table.focus()
    _run_command(screen, command)


def _run_command(screen: MainPort, command: Command) -> None:
    verb = command.verb
    if verb == "tab":
        show_tab(screen, command.argument)
    elif verb == "help":
        screen.action_help()
    elif verb == "quit":
        screen.app.exit()
    elif verb == "costs":
        screen.run_worker(tools.open_costs(screen), group="tools")
    elif verb == "charts":
        screen.run_worker(tools.open_charts(screen), group="tools")
    elif verb == "prune":
        screen.run_worker(tools.prune_rows(screen, command), group="ops")
    elif verb == "fleet":
        screen.app.push_screen(FleetScreen(screen.feed.opened().background, screen.config.clock))
    elif verb == "sort":
        sort_by(screen, *sort_arguments(command.argument))
    elif verb == "columns":
        state = screen.state
        state.columns = column_names(command)
        screen.table.choose_columns(state.columns)
        screen.panels_changed()  # the app remembers it


def show_panels(screen: MainPort) -> None:
    """The panels as the state has them: hidden ones hidden, the detail's width (app.tcss)."""
    for panel in ("detail", "log"):
        screen.set_class(panel in screen.state.hidden, f"-hide-{panel}")
    for width in range(1, 5):
        screen.set_class(width == screen.state.detail_width, f"-detail-{width}")


def toggle_panel(screen: MainPort, panel: str) -> None:
    shown = screen.state.toggle_panel(panel)
    show_panels(screen)
    screen.notify(f"{panel} {'shown' if shown else 'hidden'} ({panel[0].upper()} toggles)")
    screen.panels_changed()


def width_detail(screen: MainPort, step: int) -> None:
    screen.state.step_detail_width(step)
    show_panels(screen)
    screen.panels_changed()
