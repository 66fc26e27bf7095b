"""How the console's keys reach what they act on (the app's part).

A key goes, in order, to: the line `/` or `:` just opened (typeahead.py's
`TypeAhead`); a focused text field (an Input or a TextArea takes every key,
however fast); else the paste guard (typeahead.py's `PasteGuard`), which
routes the keys read in one go once the app is idle and the ledger is open.
A key typed before a question was shown does not answer it, and an action
that reads the highlighted row waits for the cursor a key moved
(key_order.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from functools import partial

from textual import events
from textual.actions import ActionParseResult, parse
from textual.app import App
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Input, TextArea
from textual.worker import Worker

from reclaim_tui.tui.gc_idle import IdleCollector
from reclaim_tui.tui.key_order import KeyOrder
from reclaim_tui.tui.screens.ask import AskScreen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.export import ExportScreen
from reclaim_tui.tui.screens.main import MainScreen
from reclaim_tui.tui.screens.submit import SubmitScreen
from reclaim_tui.tui.typeahead import PasteGuard, TypeAhead
from reclaim_tui.tui.worker_wait import finished, painted

__all__ = ["KeyRouting"]

#: Keys that quit (the console's and Textual's), which need no ledger open.
_QUIT_KEYS = frozenset({"q", "ctrl+q", "ctrl+c"})
#: The dialogs that ask: a key typed before one was shown does not answer it.
_QUESTIONS = (ConfirmScreen, AskScreen, SubmitScreen, ExportScreen)


def _moving(main: MainScreen) -> bool:
    """A key asked for a window whose cursor has not landed yet."""
    return main.table.asking or main.feed.move is not None


async def _landed(main: MainScreen) -> None:
    """Return once no window a key asked for is on its way."""
    while _moving(main):
        move = main.feed.move
        if move is not None:
            await finished(move)
        else:
            await painted(main.app, main)  # the table's PageRequested read


class KeyRouting(App[None]):
    """The app's key routing; `route_keys_of` names the main screen."""

    main: MainScreen
    idle_collector: IdleCollector

    def route_keys_of(self, main: MainScreen) -> None:
        # The app's workers tell it of each state they enter; nothing here listens.
        self.disable_messages(Worker.StateChanged)
        self.typeahead = TypeAhead(self, self._opens_line)
        self.paste_guard = PasteGuard()
        self.key_order = KeyOrder(partial(_moving, main), partial(_landed, main), _QUESTIONS)
        #: When the keys held are judged, while a burst may go on (`route_keys`).
        self._burst_end: asyncio.TimerHandle | None = None

    def watch_screens(self) -> None:
        """Once mounted: note when each question is shown (key_order.py)."""
        self.screen_change_signal.subscribe(self, self.key_order.shown, immediate=True)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            self.idle_collector.key()  # tui/gc_idle.py
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self.typeahead.active:
                self.typeahead.hold(event)
                return
            if self.main.feed.reader is None and event.key in _QUIT_KEYS:
                await super().on_event(event)  # quitting does not wait for the ledger
                return
            # A text field takes every key, however fast (a paste, typeahead);
            # keys elsewhere are actions, judged once the app is idle.
            if not isinstance(self.focused, Input | TextArea):
                self.paste_guard.hold(event)  # routed when idle (tui/typeahead.py)
                return
        elif isinstance(event, events.Key) and self.key_order.stale(event, self.screen):
            return  # typed before the question it would answer was shown (key_order.py)
        await super().on_event(event)

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """An action of the main screen that reads the highlighted row runs
        once the cursor a key moved has landed (tui/key_order.py)."""
        target, name = self._action_target(action, default_namespace, namespaces)
        if target is self.main or target is self.main.table:
            if self.key_order.must_wait(name):

                async def later() -> bool:
                    return await App.run_action(self, action, default_namespace, namespaces)

                if self.key_order.wait(later):
                    self.run_worker(self.key_order.drain(), group="keys")
                return True
        return await super().run_action(action, default_namespace, namespaces)

    def _action_target(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None,
        namespaces: Mapping[str, DOMNode] | None,
    ) -> tuple[DOMNode | None, str]:
        """The node an action runs on and its name, as Textual resolves them:
        a namespace given (`screen.`, `app.`, `focused.`) or the default."""
        destination, name, _ = action if isinstance(action, tuple) else parse(action)
        target = None if namespaces is None else namespaces.get(destination)
        if destination and target is None and destination in ("app", "screen", "focused"):
            target = getattr(self, destination, None)
        if target is None and not destination:
            target = self if default_namespace is None else default_namespace
        return target, name

    async def on_idle(self) -> None:
        await self.route_keys()

    async def route_keys(self) -> None:
        """Route the keys held since the last idle (tui/typeahead.py); before the
        ledger is open they wait for it (a tab or `/` reads it)."""
        if self.main.feed.reader is None:
            return
        wait = self.paste_guard.due_in()
        if wait > 0:  # the burst may go on: judge it whole (typeahead.py)
            if self._burst_end is None:
                # A timer of the event loop's, not a worker: a worker a key
                # was a task, three state messages and a reference cycle.
                loop = asyncio.get_running_loop()
                self._burst_end = loop.call_later(wait, self._burst_over)
            return
        keys, pasted = self.paste_guard.release()
        if pasted:
            self.notify(
                f"{pasted:,} keys came at once (a paste?) and were ignored: keys here are"
                " actions. To paste text, open its line first (/ filter, : command).",
                severity="warning",
            )
        for key in keys:
            if not self.typeahead.hold(key):
                await super().on_event(key)

    def _burst_over(self) -> None:
        """The burst may be over: the app's next idle routes its keys
        (`route_keys`, which waits again if it is not)."""
        self._burst_end = None
        self.check_idle()

    @property
    def keys_held(self) -> bool:
        """Keys wait for their burst to end (tests and benchmarks wait for them)."""
        return self.paste_guard.holding

    def _opens_line(self, key: str) -> Widget | None:
        """`/` and `:` on the ledger view: open the line now (typeahead.py)."""
        if self.screen is not self.main or isinstance(self.focused, Input):
            return None
        return self.main.open_line(key)
