"""The main screen: the ledger table with its tabs and filter, the loop bar, the
row's detail and the loop's activity, and every key that works on them.

It reacts to what its workers post: the reads' (feed.py: RowsChanged,
DetailLoaded, CountsChanged, CompletionsRecorded), the operator actions'
(group "ops", operations.py: ActionFinished), and the app's reclaim loop's
(TickFinished, TickFailed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Header, Input

from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.queries import ConsoleReader
from reclaim_tui.core.ledger.views import SORTS, View
from reclaim_tui.core.models import Row, Status
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.errors import LedgerError
from reclaim_tui.runner.commands import Adopt, Answer, Cancel, Retry
from reclaim_tui.tui import operations, row_actions
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.feed import LedgerFeed
from reclaim_tui.tui.format import attention_text, inbox_text, shorten_error
from reclaim_tui.tui.keymap import TABS, action_enabled, bindings
from reclaim_tui.tui.messages import (
    ActionFinished,
    CompletionsRecorded,
    CountsChanged,
    DetailLoaded,
    RowsChanged,
    SubmitFinished,
    TickFailed,
    TickFinished,
    while_shown,
)
from reclaim_tui.tui.operations import Done, OperatorEngine
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.screens import tools
from reclaim_tui.tui.screens.ask import PlanScreen, adopt_screen, answer_screen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.export import ExportRequest, ExportScreen
from reclaim_tui.tui.screens.fleet import FleetScreen
from reclaim_tui.tui.screens.follow import FollowScreen
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.screens.job_screen import JobScreen
from reclaim_tui.tui.screens.submit import SubmitRequest, SubmitScreen
from reclaim_tui.tui.state import ConsoleState, Cursor, Window
from reclaim_tui.tui.widgets.command_line import (
    Command,
    CommandLine,
    column_names,
    saved_view,
    sort_arguments,
)
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
        #: The price table, read at the first costs, charts or retry (screens/tools.py).
        self.prices: PriceTable | None = None
        self.state = ConsoleState()
        self.bar = LoopBarState()
        self.feed = LedgerFeed(self, self.state, config, redraw=self.rerender)
        #: The row whose detail was asked for last (shown, or on its way).
        self._detail_for: str | None = None

    # -- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
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
        self.show_panels()
        self.show_bar()
        if self.host is None:
            note = "read-only: watching the ledger; no loop, no operator actions"
        elif self.config.attach:
            note = f"console started, attached to {self.config.attach}: the service's passes"
        else:
            mode = "paused (P resumes)" if self.pace.paused else "running"
            note = f"console started; reclaim loop {mode}, a pass every {self.pace.interval:g}s"
        self.query_one(LoopLog).line(self.config.clock.now(), note)
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

    def follow(self, reader: ConsoleReader) -> None:
        """Read through `reader` (the app's): the first page, then watch the ledger."""
        self.feed.follow(reader)

    # -- reacting --------------------------------------------------------------------------
    @while_shown
    def on_rows_changed(self, event: RowsChanged) -> None:
        if event.counts is not None:
            self._show_counts(event.counts)
        for follow in self._follow_screens():
            follow.reload()  # the ledger changed: the followed job may have
        if event.view != self.state.view():
            return  # the operator moved on before this page arrived
        before = self.table.current_row()
        self.state.window = Window(event.page, event.view, event.offset)
        self.table.has_before, self.table.has_after = event.page.has_before, event.page.has_after
        self.rerender(event.cursor)
        after = self.table.current_row()
        # The highlighted row left the tab (it moved to another status): the
        # cursor is on its neighbour now, and the detail says so.
        left, pane = None, self.query_one(DetailPane)
        if event.cursor != "keep":
            pane.forget_left(self.config.clock.now())  # the operator moved on
        elif before is not None and before.idem not in self.table.rows:
            left = before.idem
        if after is not None and (after != before or left):
            self._load_detail(after.idem, left)
        elif after is None:
            note = (left, "the tab is empty now") if left else None
            pane.show(None, self.config.clock.now(), True, note)

    def _follow_screens(self) -> list[FollowScreen]:
        """The follow view, shown or under help or the raw JSON."""
        return [s for s in self.app.screen_stack if isinstance(s, FollowScreen)]

    def _load_detail(self, idem: str, left: str | None = None) -> None:
        self._detail_for = idem
        self.feed.load_detail(idem, left)

    def rerender(self, cursor: Cursor = "keep") -> None:
        rows, now = self.state.window.page.rows, self.config.clock.now()
        self.table.show_rows(rows, now, self.state.marks, self.feed.dead, cursor)
        self.query_one(DetailPane).redraw(now)  # the detail's ages move with the table's
        for follow in self._follow_screens():
            follow.redraw()
        self.show_bar()

    @while_shown
    def on_counts_changed(self, event: CountsChanged) -> None:
        self._show_counts(event)

    def _show_counts(self, event: CountsChanged) -> None:
        self.state.counts, self.state.orphans = event.counts, event.orphans
        if event.attention is not None:
            self.bar.attention = attention_text(event.attention)
        if event.inbox is not None:
            now = self.config.clock.now()
            self.bar.inbox = inbox_text(event.inbox, now)
            refused_at = event.inbox.refused_at
            self.bar.inbox_alarm = refused_at is not None and now - refused_at < 300
        self.query_one(StatusTabs).show_counts({t.id: self.state.tab_count(t) for t in TABS})
        self.show_bar()

    @while_shown
    def on_detail_loaded(self, event: DetailLoaded) -> None:
        if event.idem == self.table.current_idem():
            self.query_one(DetailPane).show(event.detail, self.config.clock.now(), left=event.left)

    @while_shown
    def on_tick_finished(self, event: TickFinished) -> None:
        self.query_one(LoopLog).tick(event.report, event.seconds, event.at)
        self.bar.last = f"last pass {event.seconds:.2f}s: {event.report.summary()}"
        down, deferred = event.report.unavailable, event.report.counts["deferred"]
        if down:
            self.bar.api = f"unavailable ({down[0]})"
        else:
            self.bar.api = f"degraded ({deferred} deferred)" if deferred else "ok"
        if down:
            self.query_one(LoopLog).line(
                event.at,
                f"API unreachable or refusing us ({down[0]}): {shorten_error(down[1], 200)}",
                error=True,
            )
        self.feed.watch(force=True)

    @while_shown
    def on_tick_failed(self, event: TickFailed) -> None:
        self.query_one(LoopLog).line(event.at, f"pass failed: {event.error}", error=True)
        self.bar.last = "last pass failed (see log)"

    @while_shown
    def on_completions_recorded(self, event: CompletionsRecorded) -> None:
        self.query_one(Throughput).record(event.times, self.config.clock.now())

    @while_shown
    def on_action_finished(self, event: ActionFinished) -> None:
        self.notify(event.text, severity=event.severity)
        self.query_one(LoopLog).line(self.config.clock.now(), f"console: {event.text}")
        self.feed.watch(force=True)

    @on(DataTable.RowHighlighted, "#table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        # A redraw highlights rows on its way to the cursor's: only the row
        # under the cursor counts, and only when its detail is not on its way.
        idem = event.row_key.value
        if idem is None or self.feed.reader is None or idem != self.table.current_idem():
            return
        if idem != self._detail_for:
            self._load_detail(idem)

    @on(DataTable.RowSelected, "#table")
    def _selected(self) -> None:
        self.action_toggle_detail()

    def on_ledger_table_page_requested(self, event: LedgerTable.PageRequested) -> None:
        self.feed.load_page(event.direction, cursor=event.cursor)

    def on_ledger_table_sort_requested(self, event: LedgerTable.SortRequested) -> None:
        self.action_sort_by(event.column)

    @on(StatusTabs.TabActivated)
    def _tab_clicked(self, event: StatusTabs.TabActivated) -> None:
        if event.tab.id in {t.id for t in TABS} and event.tab.id != self.state.tab:
            self.action_show_tab(event.tab.id)

    @on(Input.Submitted, "#filter")
    def _filter_entered(self, event: Input.Submitted) -> None:
        try:
            self.state.set_filter(event.value)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one(FilterBar).close()
        self.table.focus()
        self.feed.load_page("first", cursor="top")

    # -- view keys (no I/O: a new state, then a new window) -----------------------------------
    def show_bar(self) -> None:
        s, bar = self.state, self.bar
        bar.mode, bar.interval, bar.marks = self.pace.mode, self.pace.interval, len(s.marks)
        bar.sort, bar.filter = s.sort.label, s.filter_text
        bar.window = s.window_text()
        # The app's loop may report a pass while the screen is being torn
        # down (quit during a pass): there is no bar left to show it on.
        for widget in self.query(LoopBar):
            widget.show(bar)

    def action_show_tab(self, tab: str) -> None:
        self.state.tab = tab
        self.query_one(StatusTabs).active = tab
        self.feed.load_page("first", cursor="top")

    def set_sort(self, index: int) -> None:
        self.state.sort_index, self.state.column_sort = index, None
        self.feed.load_page("first", cursor="top")

    def action_sort_by(self, column: str, descending: bool | None = None) -> None:
        """Sort by any column (shift+letter again: the other way; `:sort`)."""
        try:
            self.state.sort_by(column, descending)
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self.feed.load_page("first", cursor="top")

    def action_cycle_sort(self) -> None:
        self.set_sort((self.state.sort_index + 1) % len(SORTS))

    def action_first_page(self) -> None:
        self.feed.load_page("first", cursor="top")

    def action_last_page(self) -> None:
        self.feed.load_page("last", cursor="bottom")

    def action_filter(self) -> None:
        self.query_one(FilterBar).open(self.state.filter_text)

    def open_line(self, key: str) -> Input | None:
        """Open the line `key` opens (`/` the filter, `:` the command line) and
        return its input, for the keys typed after it (tui/typeahead.py)."""
        if key == "slash":
            self.action_filter()
            return self.query_one(FilterBar)
        if key == "colon":
            self.action_command_line()
            return self.query_one(CommandLine).input
        return None

    def action_toggle_detail(self) -> None:
        if self.maximized is not None:
            self.minimize()
            self.table.focus()
        else:
            pane = self.query_one(DetailPane)
            self.maximize(pane, container=False)
            pane.focus()

    def action_clear(self) -> None:
        bar, line = self.query_one(FilterBar), self.query_one(CommandLine)
        if line.is_open:
            line.close()
            self.table.focus()
        elif bar.has_class("-open"):
            bar.close()
            self.table.focus()
        elif self.maximized is not None:
            self.action_toggle_detail()
        elif self.state.marks:
            self.state.marks.clear()
            self.rerender()
        elif self.state.filter_text:
            self.state.set_filter("")
            self.feed.load_page("first", cursor="top")

    def action_refresh(self) -> None:
        self.feed.watch(force=True)

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

    # -- the command line and the panels ------------------------------------------------------
    def action_command_line(self) -> None:
        self.query_one(FilterBar).close()
        self.query_one(CommandLine).open()

    @on(CommandLine.Entered)
    def _command(self, event: CommandLine.Entered) -> None:
        line, command = self.query_one(CommandLine), event.command
        if command.verb == "view":
            try:
                command = Command("filter", saved_view(self.state.views, command.argument))
            except ValueError as exc:
                line.say(str(exc))
                return
        if command.verb in ("model", "filter"):
            try:
                self._filter_by(command)
            except ValueError as exc:
                line.say(str(exc))
                return
        line.close()
        self.table.focus()
        if command.verb == "tab":
            self.action_show_tab(command.argument)
        elif command.verb == "help":
            self.action_help()
        elif command.verb == "quit":
            self.app.exit()
        elif command.verb == "costs":
            self.action_costs()
        elif command.verb == "charts":
            self.action_charts()
        elif command.verb == "prune":
            self.prune(command)
        elif command.verb == "fleet":
            self.app.push_screen(FleetScreen(self.feed.opened().background, self.config.clock))
        elif command.verb == "sort":
            self.action_sort_by(*sort_arguments(command.argument))
        elif command.verb == "columns":
            self.state.columns = column_names(command)
            self.table.choose_columns(self.state.columns)
            self.post_message(self.PanelsChanged())  # the app remembers it

    # -- views over the whole ledger (screens/tools.py) -------------------------------------
    @work(group="tools")
    async def action_costs(self) -> None:
        await tools.open_costs(self)

    @work(group="tools")
    async def action_charts(self) -> None:
        await tools.open_charts(self)

    @work(group="ops")
    async def prune(self, command: Command) -> None:
        await tools.prune_rows(self, command)

    def _filter_by(self, command: Command) -> None:
        if command.verb == "model":
            self.state.set_model(command.argument)
        else:
            self.state.set_filter(command.argument)
        self.feed.load_page("first", cursor="top")

    def action_toggle_panel(self, panel: str) -> None:
        shown = self.state.toggle_panel(panel)
        self.show_panels()
        self.notify(f"{panel} {'shown' if shown else 'hidden'} ({panel[0].upper()} toggles)")
        self.post_message(self.PanelsChanged())

    def action_detail_width(self, step: int) -> None:
        self.state.step_detail_width(step)
        self.show_panels()
        self.post_message(self.PanelsChanged())

    def show_panels(self) -> None:
        """The panels as the state has them: hidden ones hidden, the detail's width (app.tcss)."""
        for panel in ("detail", "log"):
            self.set_class(panel in self.state.hidden, f"-hide-{panel}")
        for width in range(1, 5):
            self.set_class(width == self.state.detail_width, f"-detail-{width}")

    # -- operator keys (operations.py does the work) --------------------------------------------
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

    def _targets(self) -> list[str]:
        if self.state.marks:
            return sorted(self.state.marks)
        current = self.table.current_idem()
        return [current] if current else []

    def action_refuse(self, what: str) -> None:
        self.notify(f"read-only console: {what} is disabled", severity="warning")

    @work(group="ops")
    async def action_retry(self) -> None:
        checked = await self._check("retry", operations.RETRYABLE)
        if checked is None:
            return
        retry = partial(self.operate, self._row_action("retried", Retry(tuple(checked.eligible))))
        if not self.config.confirm:
            retry()  # the operator turned the questions off (settings.toml)
            return
        # Every row retried is sent again, and paid for again: ask first, with the cost.
        estimate = await tools.resubmit_estimate(self, checked.eligible)
        question = operations.retry_question(checked, estimate, marked=bool(self.state.marks))
        self.confirm("retry", question, "Retry", retry)

    @work(group="ops")
    async def action_cancel_jobs(self) -> None:
        checked = await self._check("cancel", operations.CANCELLABLE)
        if checked is None:
            return
        cancel = self._row_action("cancelled", Cancel(tuple(checked.eligible)))
        question = operations.cancel_question(checked, marked=bool(self.state.marks))
        self.confirm("cancel", question, "Cancel jobs", lambda: self.operate(cancel))

    async def _check(self, verb: str, applies_to: tuple[Status, ...]) -> operations.Checked | None:
        """The targets `verb` applies to; None (and a line saying why) when none."""
        targets = self._targets()
        if not targets:
            self.notify(f"no row to {verb}", severity="warning")
            return None
        try:
            checked = await operations.check_rows(self.feed.opened(), verb, targets, applies_to)
        except (LedgerError, sqlite3.OperationalError) as exc:
            self.notify(f"ledger read failed: {exc}", severity="error")
            return None
        if not checked.eligible:
            self.notify(checked.refusal(), severity="error")
            return None
        return checked

    def _row_action(self, verb: str, command: Retry | Cancel) -> Callable[[], Awaitable[Done]]:
        return partial(operations.run_rows, self.engine_host(), verb, command)

    @work(group="ops")
    async def action_poll_now(self) -> None:
        await row_actions.poll_now(self)

    def action_discard(self) -> None:
        row_actions.discard_row(self)

    @work(group="ops")
    async def action_recover(self) -> None:
        marked = sorted(self.state.marks)
        idems = marked or (await self.feed.opened().matching_idems(View(orphans=True)))[0]
        if not idems:
            self.notify("no orphans to recover", severity="warning")
            return
        recover = partial(operations.recover_rows, self.engine_host(), idems)
        if not self.config.confirm:
            self.operate(recover)  # the operator turned the questions off (settings.toml)
            return
        # A resubmitted orphan is paid for again (if the first create landed too): say how much.
        estimate = await tools.resubmit_estimate(self, idems)
        question = operations.recover_question(len(idems), marked=bool(marked), estimate=estimate)
        self.confirm("recover orphans", question, "Recover", lambda: self.operate(recover))

    def action_replay(self) -> None:
        marked = sorted(self.state.marks)
        waiting = self.state.counts.get(Status.DONE.value, 0)
        if not marked and not waiting:
            self.notify("no done-but-unconsumed rows to replay", severity="warning")
            return
        replay = partial(operations.replay_rows, self.engine_host(), marked or None)
        question = operations.replay_question(len(marked), waiting)
        self.confirm("replay", question, "Replay", lambda: self.operate(replay))

    def action_adopt(self) -> None:
        row = self.table.current_row()
        if row is None:
            self.notify("no row to adopt for", severity="warning")
            return
        refusal = operations.adopt_refusal(row)
        if refusal is not None:
            self.notify(refusal, severity="error")
            return
        engine, idem = self.engine_host(), row.idem

        def answered(handle: str | None) -> None:
            if handle:
                verb = f"adopted {handle} for"
                self.operate(partial(operations.run_rows, engine, verb, Adopt(idem, handle)))

        self.app.push_screen(adopt_screen(idem, row.status.value), answered)

    def action_answer(self) -> None:
        row = self.table.current_row()
        if row is None:
            self.notify("no row to answer", severity="warning")
            return
        refusal = operations.answer_refusal(row)
        if refusal is not None:
            self.notify(refusal, severity="error")
            return
        engine, idem = self.engine_host(), row.idem

        plan = (row.last_error or "").startswith(PLAN_READY)
        screen = answer_screen(idem, row.handle or "", operations.asked(row), plan=plan)

        def answered(text: str | None) -> None:
            if text:
                refine = isinstance(screen, PlanScreen) and screen.refine
                command = Answer(idem, text, refine=refine)
                verb = "asked for a new plan of" if refine else "answered"
                self.operate(partial(operations.run_rows, engine, verb, command))

        self.app.push_screen(screen, answered)

    def action_submit(self) -> None:
        default = self.config.settings.model
        models = sorted({default, *self.config.models})
        screen = SubmitScreen(default, models, lambda request: self.submit_jobs(request, screen))

        def finished(text: str | None) -> None:
            if text:
                self.post_message(ActionFinished(text))

        self.app.push_screen(screen, finished)

    @work(group="ops")
    async def submit_jobs(self, request: SubmitRequest, screen: SubmitScreen) -> None:
        engine, default = self.engine_host(), self.config.settings.model
        outcome = await operations.submit_jobs(engine, request, default, screen.post_message)
        if isinstance(outcome, SubmitFinished):
            self.pace.kick()
        screen.post_message(outcome)

    def action_export(self) -> None:
        name = str(self.config.files_dir / operations.export_file_name(self.config.clock.now()))
        self._open_export(ExportRequest(name, "jsonl"))

    def _open_export(self, last: ExportRequest, error: str = "") -> None:
        """The export dialog; after a failed write, again with its path and why."""
        view, files_dir = self.state.view(), self.config.files_dir
        summary = operations.export_summary(
            self.state.tab_spec.label, self.state.filter_text, files_dir
        )

        def chosen(request: ExportRequest | None) -> None:
            if request:
                self._export(view, request)

        self.app.push_screen(ExportScreen(summary, last.path, error, last.fmt), chosen)

    @work(group="ops")
    async def _export(self, view: View, request: ExportRequest) -> None:
        files_dir = self.config.files_dir
        done = await operations.export_rows(self.feed.opened(), view, request, files_dir)
        if done.finished.severity == "error":
            # A bad path closed the dialog and lost what was typed: keep both.
            self._open_export(request, done.finished.text)
            return
        self.post_message(done.finished)

    def action_toggle_mark(self) -> None:
        idem = self.table.current_idem()
        if idem is None:
            return
        self.table.set_mark(idem, self.state.toggle_mark(idem))
        self.show_bar()
        self.table.action_cursor_down()

    @work(group="ops")
    async def action_mark_all(self) -> None:
        idems, capped = await self.feed.opened().matching_idems(self.state.view())
        self.state.marks = set(idems)
        self.rerender()
        note = " (capped: narrow the filter)" if capped else ""
        self.notify(
            f"marked {len(idems):,} row{'s' if len(idems) != 1 else ''}{note}",
            severity="warning" if capped else "information",
        )
