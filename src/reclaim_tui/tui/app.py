"""ReclaimApp: the console's lifetime. It owns the engine host (start, the
reclaim loop, stop), the loop's pace and its keys (P, +, -), the ledger
reader (open, close) and the settings file (read before the first paint,
written when the operator changes the theme, the interval or the panels);
the main screen (screens/main.py) shows and reads the ledger and has every
other key.

Workers of the app and what they post:
    boot    once the main screen is up: open the reader, hand it to the screen
            (which reads and watches), and once its first page is drawn start
            the engine host (first, when the engine must create the ledger)
    loop    a pass every `interval` s, run by the engine host (a worker process
            for real backends, runner/host.py) → TickFinished / TickFailed, to
            the main screen; attached to a service (`--attach`), the service's
            own state instead, every second, and the loop's keys act on the
            service (service_link.py)
    settings  the settings file written after a change (config.ConsoleSettings)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable
from typing import Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import BindingType
from textual.dom import DOMNode
from textual.screen import Screen
from textual.worker import WorkerState

from reclaim_tui.config import (
    MAX_INTERVAL,
    ConsoleSettings,
    console_settings_path,
    load_console_settings,
    save_console_settings,
)
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.tui.bindings import action_enabled, bindings
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.gc_freeze import StartupFreeze
from reclaim_tui.tui.gc_idle import IdleCollector
from reclaim_tui.tui.key_routing import KeyRouting
from reclaim_tui.tui.keymap import APP_ACTIONS, KEYS
from reclaim_tui.tui.ledger_switch import switch_ledger
from reclaim_tui.tui.messages import TickFailed, TickFinished
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.screens.main import MainScreen
from reclaim_tui.tui.service_link import ServiceLink
from reclaim_tui.tui.settings_keeper import apply_saved, merge_changes, settings_now
from reclaim_tui.tui.state import ConsoleState
from reclaim_tui.tui.widgets.command_line import CommandLine, pace_argument
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.textual_private import divide_whole_uncached
from reclaim_tui.tui.worker_wait import finished, painted

__all__ = ["ReclaimApp"]


class ReclaimApp(KeyRouting):
    CSS_PATH = "app.tcss"
    TITLE = "reclaim-tui"
    BINDINGS: ClassVar[list[BindingType]] = bindings(on_app=True)

    def __init__(self, config: ConsoleConfig) -> None:
        super().__init__()
        divide_whole_uncached()  # a line drawn whole is no garbage (widgets/textual_private.py)
        self.config = config
        #: Where the engine runs; None: a read-only console (no loop, no operator actions).
        self.host = config.host
        self.reader: ConsoleReader | None = None
        # A few hundred bytes read before the app runs: nothing is on screen yet.
        self.settings_path = console_settings_path()
        self.remembered, self.settings_problem = load_console_settings(self.settings_path)
        applied = apply_saved(config, self.remembered, self.settings_path, self.available_themes)
        if applied.theme is not None:
            self.theme = applied.theme
        self.started_theme = self.theme
        self.settings_problem = self.settings_problem or applied.problem
        self.interval_note = applied.interval_note
        mode = "read-only" if self.host is None else "starting"
        self.pace = LoopPace(config.interval, config.paused, mode)
        self.main = MainScreen(config, self.pace)
        self.main.state.hidden = set(self.remembered.hidden)
        self.main.state.detail_width = self.remembered.detail_width or 2
        self.main.state.columns = self.remembered.columns
        self.main.state.views = dict(self.remembered.views)
        self.sub_title = config.subtitle or shown_db(config.settings.db)
        self._saving = asyncio.Lock()
        self.startup_freeze = StartupFreeze(lambda: self.config.freeze_gc)  # tui/gc_freeze.py
        self.idle_collector = IdleCollector(config.clock.now, lambda: self.config.freeze_gc)
        self.route_keys_of(self.main)  # tui/key_routing.py
        #: Attached to a service: its state, and the loop's keys act on it.
        self.service: ServiceLink | None = None
        if isinstance(self.host, AttachedHost):
            self.service = ServiceLink(self.host, self.main, self.pace)

    def on_load(self) -> None:
        self.startup_freeze.early()  # tui/gc_freeze.py

    def on_mount(self) -> None:
        if self.settings_problem:
            # Left as it is: it may be a hand edit with a typo, which a
            # rewrite would lose. Nothing is written to it this session.
            self.notify(
                f"{self.settings_problem}. Started with the defaults; the file is left"
                " as it is and changes made now are not saved (fix or remove it).",
                severity="warning",
                timeout=30,
            )
        if self.interval_note:
            self.notify(self.interval_note, timeout=10)
        self.theme_changed_signal.subscribe(self, lambda _: self.remember())
        self.watch_screens()

    def get_default_screen(self) -> MainScreen:
        return self.main

    def on_main_screen_ready(self) -> None:
        self.boot()

    def on_main_screen_panels_changed(self) -> None:
        self.remember()

    async def on_unmount(self) -> None:
        self.idle_collector.stop()
        self.startup_freeze.thaw()
        if self.host is not None:
            await self.host.stop()
        if self.reader is not None:
            await self.reader.close()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action_enabled(action, readonly=self.host is None)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if screen is not self.main:
            return  # the actions below are the table's
        for spec in KEYS:
            if spec.action == "noop" or (spec.mutating and self.host is None):
                continue
            if "main" not in spec.views:
                continue
            if spec.action in ("command_palette", "quit"):
                continue
            # The loop's keys are the app's; every other one acts on the main screen.
            target: DOMNode = self if spec.action in APP_ACTIONS else self.main

            async def run(action: str = spec.action, target: DOMNode = target) -> None:
                await self.run_action(action, target)

            yield SystemCommand(f"{spec.title} ({spec.shown})", spec.help, run)

    # -- workers --------------------------------------------------------------------------
    @work(group="boot")
    async def boot(self) -> None:
        host, engine_first = self.host, False
        if host is not None:
            db = self.config.settings.db
            # The engine creates the ledger (the demo's); a database on a
            # server cannot be looked at from here, so wait for it there too.
            file = ledger_file(db)
            if file is None or not file.exists():
                engine_first = True
                if not await finished(self.start_engine()):
                    return  # quit or replaced (`:ledger`) before the engine was up
        try:
            self.reader = await ConsoleReader.open(
                self.config.settings.db,
                clock=self.config.clock,
                busy_timeout=self.config.settings.busy_timeout,
            )
        except ReclaimError as exc:
            self.exit(return_code=4, message=f"error: {exc}")
            return
        # PostgreSQL without pg_trgm's indexes: the filter reads every row.
        note = self.reader.background.text_index_note
        if note:
            self.notify(note, title="text filter", severity="warning")
        following = self.main.follow(self.reader)
        self.call_later(self.route_keys)  # the keys typed while it opened
        if not await finished(following):
            return  # quit or replaced (`:ledger`) before the first page
        await painted(self, self.main)  # the page's RowsChanged (feed.py) shown
        self.startup_freeze.freeze()
        self.idle_collector.start(self.set_interval)  # full collections: tui/gc_idle.py
        if host is not None and not engine_first and self.host is host:
            self.start_engine()  # (a `:ledger` switch since starts its own host)

    @work(group="boot")
    async def start_engine(self) -> None:
        """Start the engine host, then the loop."""
        assert self.host is not None
        try:
            await self.host.start()
        except ReclaimError as exc:
            self.exit(return_code=4, message=f"error: {exc}")
            return
        if self.service is not None:  # the service runs the passes: show its own state
            self.run_worker(self.service.watch(), group="loop", exclusive=True)
            return
        self.pace.idle()
        self.main.show_bar()
        self.reclaim_loop()

    @work(exclusive=True, group="loop")
    async def reclaim_loop(self) -> None:
        assert self.host is not None
        clock = self.config.clock
        while True:
            if not self.pace.paused:
                started = time.perf_counter()
                self.pace.ticking()
                self.main.show_bar()
                try:
                    report = await self.host.tick(self.pace.interval)
                except ReclaimError as exc:
                    self.main.post_message(TickFailed(str(exc), clock.now()))
                else:
                    elapsed = time.perf_counter() - started
                    self.main.post_message(TickFinished(report, elapsed, clock.now()))
            else:  # no pass: the process registry hears it is paused (and alive)
                with contextlib.suppress(ReclaimError):
                    await self.host.tick(self.pace.interval, paused=True)
            self.pace.idle()
            self.main.show_bar()
            await self.pace.wait()

    @work(group="settings")
    async def remember(self) -> None:
        """Write the settings file, if the settings differ from what it holds."""
        async with self._saving:  # the last write holds the latest settings
            now = self.console_settings()
            if now == self.remembered or self.settings_problem:
                return
            path = self.settings_path
            merged, problem = await asyncio.to_thread(merge_changes, path, self.remembered, now)
            if merged is None:  # someone's half-made edit: left alone, said once
                self.notify(f"settings not saved: {problem}", severity="warning")
                self.settings_problem = problem
                return
            try:
                await asyncio.to_thread(save_console_settings, path, merged)
            except OSError as exc:
                self.notify(f"settings not saved: {exc}", severity="warning")
                self.settings_problem = f"cannot write {path}"
                return
            self.remembered = merged
            self.main.state.views = dict(merged.views)  # those added since, too

    def console_settings(self) -> ConsoleSettings:
        interval = self.pace.interval if self.service is None else None
        # The theme is saved once the operator picks one, not the default.
        theme = self.theme if self.theme != self.started_theme else self.remembered.theme
        return settings_now(theme, interval, self.config, self.main.state, self.remembered)

    async def action_quit(self) -> None:
        # A service this console paused would stay paused, unsaid (service_link.py).
        if self.service is None or not self.service.asks_before_quit(self.exit):
            self.exit()

    # -- the loop's keys ------------------------------------------------------------------
    def action_toggle_pause(self) -> None:
        if self.service is not None:
            self.service.toggle_pause()
            return
        paused = self.pace.toggle_pause()
        self.notify("reclaim loop paused" if paused else "reclaim loop resumed")
        self._paced()

    def action_slower(self) -> None:
        if self.service is not None:
            self.service.step_interval(longer=True)
            return
        self._paced(self.pace.step_interval(longer=True))

    def action_faster(self) -> None:
        if self.service is not None:
            self.service.step_interval(longer=False)
            return
        self._paced(self.pace.step_interval(longer=False))

    def on_command_line_entered(self, event: CommandLine.Entered) -> None:
        """`:ledger`, `:interval S` and `:concurrency N` (the screen's own verbs are its)."""
        command = event.command
        if command.verb == "ledger":  # tui/ledger_switch.py
            self.run_worker(switch_ledger(self, command.argument), group="switch", exclusive=True)
            return
        if command.verb not in ("interval", "concurrency"):
            return
        value = pace_argument(command)
        if self.service is not None:
            if command.verb == "interval":
                self.service.set(interval=value)
            else:
                self.service.set(concurrency=int(value))
        elif command.verb == "concurrency":
            self.notify(
                ":concurrency sets an attached service's; this console's engine runs"
                " with its --concurrency",
                severity="warning",
            )
        elif not 0 < value <= MAX_INTERVAL:
            self.notify(
                f":interval: more than 0 and at most {MAX_INTERVAL:g} seconds", severity="error"
            )
        else:
            self.pace.interval = value
            self._paced(value)

    def _paced(self, interval: float | None = None) -> None:
        if interval is not None:
            # The file is the user's, not the ledger's: say so, or a pace set
            # in the demo surprises the next console on a real ledger.
            where = (
                f"for this console only ({self.settings_problem})"
                if self.settings_problem
                else f"saved in {self.settings_path}: every console started later uses it,"
                " on any ledger"
            )
            self.notify(f"a pass every {interval:g}s; {where}")
        self.main.show_bar()
        self.pace.kick()
        self.remember()

    def action_refuse(self, what: str) -> None:
        self.notify(f"read-only console: {what} is disabled", severity="warning")

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        # Textual's default is the user's Downloads folder, which often does not
        # exist ("Failed to save screenshot"); Textual's notice says the path.
        where = path or str(self.config.files_dir)
        return super().deliver_screenshot(filename, where, time_format)

    # -- for tests, benchmarks and screenshots ------------------------------------------------
    @property
    def state(self) -> ConsoleState:
        """What the operator is looking at (the main screen's)."""
        return self.main.state

    @property
    def table(self) -> LedgerTable:
        return self.main.table

    async def settle(self, rounds: int = 20) -> None:
        """Wait until no worker but the loop runs and no key is held (key_routing.py)."""
        for _ in range(rounds):
            busy = [
                w
                for w in self.workers
                if w.group != "loop" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
            ]
            if not busy and not self.keys_held:
                return
            await asyncio.gather(*(w.wait() for w in busy), return_exceptions=True)
            await asyncio.sleep(0.01)
