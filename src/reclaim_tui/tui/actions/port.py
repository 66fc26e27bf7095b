"""What the main screen's actions see of it: `MainPort`, the screen as a
Protocol, so the actions (this package) never import the screen that calls
them (screens/main.py) and the dependency runs one way, screens → actions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar, overload

from textual.app import App
from textual.css.query import DOMQuery
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widget import Widget
from textual.worker import Worker

from reclaim_tui.core.costs import PriceTable
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.feed import LedgerFeed
from reclaim_tui.tui.operations import Done, OperatorEngine
from reclaim_tui.tui.pace import LoopPace
from reclaim_tui.tui.state import ConsoleState
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.loop_bar import LoopBarState

__all__ = ["MainPort"]

W = TypeVar("W", bound=Widget)


class MainPort(Protocol):
    """The main screen: what the operator looks at (`state`, `bar`), the reads
    behind it (`feed`), the engine host, and the screen's own ways to ask,
    confirm and run an action in a worker."""

    config: ConsoleConfig
    state: ConsoleState
    bar: LoopBarState
    feed: LedgerFeed
    pace: LoopPace
    prices: PriceTable | None
    readonly: bool
    #: The row whose detail was asked for last (shown, or on its way).
    detail_for: str | None
    #: A tab key's highlight due without its window (actions/view.py).
    tab_alone: asyncio.TimerHandle | None

    @property
    def app(self) -> App[Any]: ...

    @property
    def table(self) -> LedgerTable: ...

    @property
    def maximized(self) -> Widget | None: ...

    @overload
    def query_one(self, selector: type[W]) -> W: ...

    @overload
    def query_one(self, selector: str, expect_type: type[W]) -> W: ...

    def query(self, selector: type[W]) -> DOMQuery[W]: ...

    def run_worker(
        self, work: Coroutine[Any, Any, None], *, group: str = "default"
    ) -> Worker[None]: ...

    def notify(
        self,
        message: str,
        *,
        severity: SeverityLevel = "information",
        timeout: float | None = None,
    ) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def set_class(self, add: bool, *class_names: str) -> Any: ...

    def call_later(self, callback: Callable[[], object]) -> bool: ...

    def maximize(self, widget: Widget, container: bool = True) -> bool: ...

    def minimize(self) -> None: ...

    def engine_host(self) -> OperatorEngine:
        """The engine host (only asked for by a key a read-only console disables)."""
        ...

    def operate(self, action: Callable[[], Awaitable[Done]]) -> Worker[None]:
        """Run `action` in the screen's "ops" worker; say how it went."""
        ...

    def confirm(self, title: str, question: str, yes: str, then: Callable[[], object]) -> None:
        """Ask first; `then` runs on yes."""
        ...

    def panels_changed(self) -> None:
        """Tell the app the panels changed (it remembers them)."""
        ...

    def action_help(self) -> None:
        """The help screen (another helper's: the screen opens it)."""
        ...
