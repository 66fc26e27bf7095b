"""ReclaimApp: bindings, workers and wiring. The widgets draw, the core decides.

Workers and what they post:
    boot           start the engine host, open the read side, first page
    loop           a tick every `interval` s, run by the engine host (a worker
                   process for real backends, engine_host.py) → TickFinished
    watch          every second and after every change (watching.py): what changed
                   since the last look → CountsChanged, RowsChanged
    page / detail  one keyset window / one row's detail → RowsChanged, DetailLoaded
    ops            operator actions (operations.py) → ActionFinished
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header
from textual.worker import WorkerState

from reclaim_tui.core.models import Row
from reclaim_tui.core.queries import ConsoleReader
from reclaim_tui.errors import LedgerError, ReclaimError
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.engine_host import EngineHost
from reclaim_tui.tui.keymap import KEYS, MUTATING, TABS, app_bindings
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
from reclaim_tui.tui.navigation import ViewActions
from reclaim_tui.tui.operations import OperatorActions
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.state import ConsoleState, Move, Window
from reclaim_tui.tui.watching import LedgerWatch
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.filter_bar import FilterBar
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.loop_bar import LoopBar, LoopBarState
from reclaim_tui.tui.widgets.loop_log import LoopLog
from reclaim_tui.tui.widgets.status_tabs import StatusTabs
from reclaim_tui.tui.widgets.throughput import Throughput

__all__ = ["ReclaimApp"]


class ReclaimApp(OperatorActions, ViewActions, LedgerWatch, App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "reclaim-tui"
    BINDINGS: ClassVar[list[BindingType]] = app_bindings()

    def __init__(self, config: ConsoleConfig) -> None:
        super().__init__()
        self.config = config
        self.state = ConsoleState()
        self.host: EngineHost | None = config.host
        self.reader: ConsoleReader | None = None
        mode = "read-only" if self.host is None else "starting"
        self.pace = LoopPace(config.interval, config.paused, mode)
        self.bar = LoopBarState()
        self.init_watch()
        self.sub_title = config.subtitle or config.settings.db

    # -- layout ----------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield StatusTabs()
        with Vertical(id="main"):
            yield LedgerTable(id="table")
            yield FilterBar()
            yield LoopBar(id="loop-bar")
            with Horizontal(id="lower"):
                yield DetailPane(id="detail")
                with Vertical(id="activity"):
                    yield Throughput(id="throughput")
                    yield LoopLog(id="log")
        yield Footer(compact=True)

    @property
    def table(self) -> LedgerTable:
        return self.query_one(LedgerTable)

    def on_mount(self) -> None:
        self.table.focus()
        self.show_bar()
        if self.host is None:
            note = "read-only: watching the ledger; no loop, no operator actions"
        else:
            mode = "paused (P resumes)" if self.pace.paused else "running"
            note = f"console started; reclaim loop {mode}, a pass every {self.pace.interval:g}s"
        self.query_one(LoopLog).line(self.config.clock.now(), note)
        self.boot()

    async def on_unmount(self) -> None:
        if self.host is not None:
            await self.host.stop()
        if self.reader is not None:
            await self.reader.close()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "refuse":
            return self.host is None
        if action in MUTATING:
            return self.host is not None
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for spec in KEYS:
            if spec.action == "noop" or (spec.mutating and self.host is None):
                continue
            if spec.action in ("command_palette", "quit"):
                continue

            async def run(action: str = spec.action) -> None:
                await self.run_action(action)

            yield SystemCommand(f"{spec.title} ({spec.shown})", spec.help, run)

    # -- workers --------------------------------------------------------------------------
    @work(group="boot")
    async def boot(self) -> None:
        if self.host is not None:
            starting = self.start_engine()
            if not Path(self.config.settings.db).exists():
                await starting.wait()  # the engine creates the ledger (the demo's)
        try:
            self.reader = await ConsoleReader.open(
                self.config.settings.db,
                clock=self.config.clock,
                busy_timeout=self.config.settings.busy_timeout,
            )
        except ReclaimError as exc:
            self.exit(return_code=4, message=f"error: {exc}")
            return
        await self.load_page("first", cursor="top").wait()
        self.watch_ledger(force=True)
        self.set_interval(self.config.watch_every, self.watch_ledger)

    @work(group="boot")
    async def start_engine(self) -> None:
        """Start the engine host beside the first paint, then the loop."""
        assert self.host is not None
        try:
            await self.host.start()
        except ReclaimError as exc:
            self.exit(return_code=4, message=f"error: {exc}")
            return
        self.pace.idle()
        self.show_bar()
        self.reclaim_loop()

    @work(exclusive=True, group="loop")
    async def reclaim_loop(self) -> None:
        assert self.host is not None
        while True:
            if not self.pace.paused:
                started = time.perf_counter()
                self.pace.mode = "ticking"
                self.show_bar()
                try:
                    report = await self.host.tick()
                except ReclaimError as exc:
                    self.post_message(TickFailed(str(exc), self.config.clock.now()))
                else:
                    elapsed = time.perf_counter() - started
                    self.post_message(TickFinished(report, elapsed, self.config.clock.now()))
            self.pace.idle()
            self.show_bar()
            await self.pace.wait()

    def kick_loop(self) -> None:
        self.pace.kick()

    @work(exclusive=True, group="page")
    async def load_page(self, move: Move, cursor: str = "keep") -> None:
        assert self.reader is not None
        window = self.state.window
        view, start, direction = self.state.page_query(move)
        for attempt in range(2):
            try:
                page = await self.reader.page(view, start, direction, self.config.page_size)
                break
            except asyncio.CancelledError:
                if view.filter.text:
                    await self.reader.interrupt()  # a slow scan the operator replaced
                raise
            except sqlite3.OperationalError as exc:
                if "interrupt" not in str(exc) or attempt:
                    self.notify(f"ledger read failed: {exc}", severity="error")
                    return
        at = self.state.page_offset(window, move, len(page.rows))
        self.post_message(RowsChanged(page, view, at, cursor))

    @work(exclusive=True, group="detail")
    async def load_detail(self, idem: str) -> None:
        assert self.reader is not None
        for attempt in range(2):
            try:
                detail = await self.reader.detail(idem)
                break
            except (LedgerError, sqlite3.OperationalError) as exc:
                # A replaced filter scan interrupts the whole page connection,
                # and with it a detail read that shared it: read it again.
                if "interrupt" not in str(exc) or attempt:
                    self.notify(f"ledger read failed: {exc}", severity="error")
                    return
        self.post_message(DetailLoaded(idem, detail))

    # -- reacting -------------------------------------------------------------------------
    @while_shown
    def on_rows_changed(self, event: RowsChanged) -> None:
        if event.view != self.state.view():
            return  # the operator moved on before this page arrived
        before = self.table.current_row()
        self.state.window = Window(event.page, event.view, event.offset)
        self.table.has_before, self.table.has_after = event.page.has_before, event.page.has_after
        self.rerender(event.cursor)
        after = self.table.current_row()
        if after is not None and after != before:
            self.load_detail(after.idem)
        elif after is None:
            self.query_one(DetailPane).show(None, self.config.clock.now(), empty=True)

    def rerender(self, cursor: str = "keep") -> None:
        dead = self.reader.dead if self.reader is not None else []
        rows = self.state.window.page.rows
        self.table.show_rows(rows, self.config.clock.now(), self.state.marks, dead, cursor)
        self.show_bar()

    @while_shown
    def on_counts_changed(self, event: CountsChanged) -> None:
        self.state.counts, self.state.orphans = event.counts, event.orphans
        self.query_one(StatusTabs).show_counts({t.id: self.state.tab_count(t) for t in TABS})
        self.show_bar()

    @while_shown
    def on_detail_loaded(self, event: DetailLoaded) -> None:
        if event.idem == self.table.current_idem():
            self.query_one(DetailPane).show(event.detail, self.config.clock.now())

    @while_shown
    def on_tick_finished(self, event: TickFinished) -> None:
        self.query_one(LoopLog).tick(event.report, event.seconds, event.at)
        self.bar.last = f"last pass {event.seconds:.2f}s: {event.report.summary()}"
        self.watch_ledger(force=True)

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
        self.watch_ledger(force=True)

    @on(DataTable.RowHighlighted, "#table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value and self.reader is not None:
            self.load_detail(event.row_key.value)

    @on(DataTable.RowSelected, "#table")
    def _selected(self) -> None:
        self.action_toggle_detail()

    # -- for tests and screenshots -------------------------------------------------------------
    async def settle(self, rounds: int = 20) -> None:
        """Wait until no worker but the loop is running."""
        for _ in range(rounds):
            busy = [
                w
                for w in self.workers
                if w.group != "loop" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
            ]
            if not busy:
                return
            await asyncio.gather(*(w.wait() for w in busy), return_exceptions=True)
            await asyncio.sleep(0.01)

    def current_row(self) -> Row | None:
        return self.table.current_row()
