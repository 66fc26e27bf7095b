"""The main screen: the ledger table with its tabs and filter, the loop bar, the
row's detail and the loop's activity, and every key that works on them.

The screen composes the widgets, binds the keys (keymap.py) and hands each key
and message to the module that does it (tui/actions/, which sees the screen
only through actions/port.py's `MainPort`):

    rows.py     retry, cancel, poll now, discard, recover, replay, adopt,
                answer, the marks
    tools.py    costs, charts, :prune, submit, export
    view.py     tabs, filter, sorts, the command line, the panels
    updates.py  what the workers found: the reads' (feed.py: RowsChanged,
                DetailLoaded, CountsChanged, CompletionsRecorded), the operator
                actions' (group "ops", operations.py: ActionFinished), and the
                app's reclaim loop's (TickFinished, TickFailed)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Header, Input
from textual.worker import Worker

from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.models import Row
from reclaim_tui.tui import ledger_health
from reclaim_tui.tui.actions import rows, tools, updates, view
from reclaim_tui.tui.bindings import action_enabled, bindings
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.feed import LedgerFeed
from reclaim_tui.tui.messages import (
    ActionFinished,
    CompletionsRecorded,
    CountsChanged,
    DetailLoaded,
    RowsChanged,
    TickFailed,
    TickFinished,
    while_shown,
)
from reclaim_tui.tui.operations import Done, OperatorEngine
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.follow import FollowScreen
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.screens.job_screen import JobScreen
from reclaim_tui.tui.state import ConsoleState, Cursor
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.command_line import CommandLine
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.filter_bar import FilterBar
from reclaim_tui.tui.widgets.footer import ConsoleFooter
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.loop_bar import LoopBar, LoopBarState
from reclaim_tui.tui.widgets.loop_log import LoopLog
from reclaim_tui.tui.widgets.status_tabs import StatusTabs
from reclaim_tui.tui.widgets.throughput import Throughput

__all__ = ["MainScreen"]


class MainScreen(JobScreen):
    """Owns what the operator is looking at (`state`) and the reads behind it.
    The app owns the engine host, the reader's lifetime and the loop's `pace`."""

    BINDINGS: ClassVar[list[BindingType]] = bindings(on_app=False)
    #: Esc goes through our binding (`clear`), which closes the full-screen
    #: detail *and* hands the keys back to the table; Textual's own minimize
    #: would leave the focus on the detail.
    ESCAPE_TO_MINIMIZE = False
    #: Below 34 rows the lower panels shrink (the table keeps ten rows at 24),
    #: below 20 they go: app.tcss. (No ClassVar: Textual declares it
    #: `ClassVar[…] | None`, which mypy reads as an instance variable.)
    VERTICAL_BREAKPOINTS = [  # noqa: RUF012
        (0, "-tiny"),
        (20, "-short"),
        (34, "-tall"),
    ]

    class Ready(Message):
        """The screen is up: the app may start the engine and open the ledger."""

    class PanelsChanged(Message):
        """The operator hid, showed or resized a panel (the app remembers it)."""

    def __init__(self, config: ConsoleConfig, pace: LoopPace) -> None:
        super().__init__()
        self.config = config
        self.host = config.host
        self.readonly = self.host is None
        self.pace = pace
        self.state = ConsoleState()
        self.bar = LoopBarState()
        self.feed = LedgerFeed(self, self.state, config, redraw=self.rerender)
        self._prices: PriceTable | None = None
        #: The row whose detail was asked for last (shown, or on its way).
        self.detail_for: str | None = None
        #: A tab key's highlight due without its window (actions/view.py).
        self.tab_alone: asyncio.TimerHandle | None = None
        # Each read is a worker here, and a worker tells its node of each
        # state it enters (three messages a read); nothing here listens.
        self.disable_messages(Worker.StateChanged)

    # -- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # The panels' classes (the app set the remembered panels before this)
        # before the widgets are mounted: set once they were, each change
        # restyled the whole screen, during the first paint.
        self.show_panels()
        yield Header()
        yield StatusTabs()
        with Vertical(id="main"):
            yield LedgerTable(id="table")
            yield FilterBar()
            yield CommandLine(id="command-line")
            yield LoopBar(id="loop-bar")
            with Horizontal(id="lower"):
                yield DetailPane(id="detail")
                with Vertical(id="activity"):
                    yield Throughput(id="throughput")
                    yield LoopLog(id="log")
        yield ConsoleFooter()

    @property
    def table(self) -> LedgerTable:
        return self.query_one(LedgerTable)

    def on_mount(self) -> None:
        self.table.choose_columns(self.state.columns)
        self.table.focus()
        self.show_bar()
        note = started_note(self.host is None, self.config.attach, self.pace)
        self.query_one(LoopLog).line(self.config.clock.now(), note)
        if self.config.created_note:  # the first notice: a mistyped --db shows an empty screen
            self.notify(self.config.created_note, severity="warning", timeout=30)
        self.run_worker(tools.show_prices_in_detail(self), group="prices")
        self.post_message(self.Ready())

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action_enabled(action, readonly=self.host is None)

    def engine_host(self) -> OperatorEngine:
        assert self.host is not None, "mutating keys are off in a read-only console"
        return self.host

    def job_row(self) -> Row | None:
        return self.table.current_row()

    def job_reader(self) -> ConsoleReader | None:
        return self.feed.reader

    @property
    def prices(self) -> PriceTable | None:
        """The price table, read at start or at the first costs, charts, retry
        or `cost` filter (actions/tools.py); the reader's `cost` words use it."""
        return self._prices

    @prices.setter
    def prices(self, table: PriceTable | None) -> None:
        self._prices = table
        if self.feed.reader is not None:
            self.feed.reader.prices = table

    def follow(self, reader: ConsoleReader) -> Worker[None]:
        """Read through `reader` (the app's): the first page, then watch the
        ledger; the worker returned is done once the first page is read."""
        reader.prices = self._prices  # the filter's `cost` prices as `$` does
        return self.feed.follow(reader)

    def rerender(self, cursor: Cursor = "keep") -> None:
        updates.rerender(self, cursor)

    def show_bar(self) -> None:
        updates.show_bar(self)

    def show_panels(self) -> None:
        view.show_panels(self)

    def panels_changed(self) -> None:
        self.post_message(self.PanelsChanged())

    def open_line(self, key: str) -> Input | None:
        return view.open_line(self, key)

    # -- reacting (actions/updates.py) --------------------------------------------------
    @while_shown
    def on_rows_changed(self, event: RowsChanged) -> None:
        updates.rows_changed(self, event)

    @while_shown
    def on_counts_changed(self, event: CountsChanged) -> None:
        updates.counts_changed(self, event)

    @while_shown
    def on_detail_loaded(self, event: DetailLoaded) -> None:
        updates.detail_loaded(self, event)

    @while_shown
    def on_tick_finished(self, event: TickFinished) -> None:
        updates.tick_finished(self, event)

    @while_shown
    def on_tick_failed(self, event: TickFailed) -> None:
        updates.tick_failed(self, event)

    on_ledger_reach = ledger_health.on_reach

    @while_shown
    def on_completions_recorded(self, event: CompletionsRecorded) -> None:
        self.query_one(Throughput).record(event.times, self.config.clock.now())

    @while_shown
    def on_action_finished(self, event: ActionFinished) -> None:
        updates.action_finished(self, event)

    @on(LedgerTable.RowHighlighted, "#table")
    def _highlighted(self, event: LedgerTable.RowHighlighted) -> None:
        event.stop()  # handled: the app has nothing to do with it
        updates.highlighted(self, event.row_key)

    @on(LedgerTable.RowSelected, "#table")
    def _selected(self) -> None:
        self.action_toggle_detail()

    def on_ledger_table_page_requested(self, event: LedgerTable.PageRequested) -> None:
        self.feed.load_page(event.direction, cursor=event.cursor)
        self.table.asking = False  # the feed's move now (key_order.py)

    @on(StatusTabs.TabActivated)
    def _tab_clicked(self, event: StatusTabs.TabActivated) -> None:
        if event.tab.id in {t.id for t in TABS} and event.tab.id != self.state.tab:
            self.action_show_tab(event.tab.id)

    @on(Input.Submitted, "#filter")
    def _filter_entered(self, event: Input.Submitted) -> None:
        view.enter_filter(self, event.value)

    @on(CommandLine.Entered)
    def _command(self, event: CommandLine.Entered) -> None:
        view.enter_command(self, event.command)

    # -- view keys (actions/view.py: no I/O, a new state, then a new window) ---------------
    def action_show_tab(self, tab: str) -> None:
        view.show_tab(self, tab)

    def action_sort_by(self, column: str, descending: bool | None = None) -> None:
        view.sort_by(self, column, descending)

    def action_cycle_sort(self) -> None:
        view.cycle_sort(self)

    def action_first_page(self) -> None:
        self.feed.load_page("first", cursor="top")

    def action_last_page(self) -> None:
        self.feed.load_page("last", cursor="bottom")

    def action_filter(self) -> None:
        view.open_filter(self)

    def action_command_line(self) -> None:
        view.open_command_line(self)

    def action_toggle_detail(self) -> None:
        view.toggle_detail(self)

    def action_clear(self) -> None:
        view.clear(self)

    def action_refresh(self) -> None:
        self.feed.watch(force=True)

    def action_toggle_panel(self, panel: str) -> None:
        view.toggle_panel(self, panel)

    def action_detail_width(self, step: int) -> None:
        view.width_detail(self, step)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(readonly=self.readonly))

    def action_follow(self) -> None:
        idem = self.table.current_idem()
        if idem is None or self.feed.reader is None:
            self.notify("no row to follow", severity="warning")
            return
        screen = FollowScreen(
            idem, self.feed.reader, self.config.clock, readonly=self.readonly, prices=self.prices
        )
        self.app.push_screen(screen, self._back_from_follow)

    def _back_from_follow(self, _: None) -> None:
        self.table.focus()

    # -- views over the whole ledger and the bulk tools (actions/tools.py) ------------------
    @work(group="tools")
    async def action_costs(self) -> None:
        await tools.open_costs(self)

    @work(group="tools")
    async def action_charts(self) -> None:
        await tools.open_charts(self)

    def action_submit(self) -> None:
        tools.submit(self)

    def action_export(self) -> None:
        tools.export(self)

    # -- operator keys (actions/rows.py asks; operations.py does the work) ------------------
    @work(group="ops")
    async def operate(self, action: Callable[[], Awaitable[Done]]) -> None:
        """Run an operator action; unmark the rows it is done with; say how it went."""
        done = await action()
        self.state.marks.difference_update(done.unmark)
        self.post_message(done.finished)

    def confirm(self, title: str, question: str, yes: str, then: Callable[[], object]) -> None:
        def answered(confirmed: bool | None) -> None:
            if confirmed:
                then()

        self.app.push_screen(ConfirmScreen(title, question, yes), answered)

    def action_refuse(self, what: str) -> None:
        self.notify(f"read-only console: {what} is disabled", severity="warning")

    @work(group="ops")
    async def action_retry(self) -> None:
        await rows.retry(self)

    @work(group="ops")
    async def action_cancel_jobs(self) -> None:
        await rows.cancel(self)

    @work(group="ops")
    async def action_poll_now(self) -> None:
        await rows.poll_now(self)

    def action_discard(self) -> None:
        rows.discard(self)

    @work(group="ops")
    async def action_recover(self) -> None:
        await rows.recover(self)

    def action_replay(self) -> None:
        rows.replay(self)

    def action_adopt(self) -> None:
        rows.adopt(self)

    def action_answer(self) -> None:
        rows.answer(self)

    def action_toggle_mark(self) -> None:
        rows.toggle_mark(self)

    @work(group="ops")
    async def action_mark_all(self) -> None:
        await rows.mark_all(self)


def started_note(readonly: bool, attach: str | None, pace: LoopPace) -> str:
    """The loop log's first line: how this console runs."""
    if readonly:
        return "read-only: watching the ledger; no loop, no operator actions"
    if attach:
        return f"console started, attached to {attach}: the service's passes"
    mode = "paused (P resumes)" if pace.paused else "running"
    return f"console started; reclaim loop {mode}, a pass every {pace.interval:g}s"
