"""Past-tense messages: workers post them, the screens and widgets react.

The main screen's reads (tui/feed.py) post theirs to the screen, which
handles them: they do not bubble on to the app, which has nothing to do
with them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.message import Message
from textual.notifications import SeverityLevel

from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.core.ledger.console.views import Detail, Page, View
from reclaim_tui.core.ledger.inbox import InboxStats
from reclaim_tui.core.ledger.retention import Attention
from reclaim_tui.tui.state import Cursor

__all__ = [
    "ActionFinished",
    "CompletionsRecorded",
    "CountsChanged",
    "DetailLoaded",
    "RowsChanged",
    "SubmitFailed",
    "SubmitFinished",
    "SubmitProgressed",
    "TickFailed",
    "TickFinished",
    "while_shown",
]

N = TypeVar("N", bound=DOMNode)
M = TypeVar("M", bound=Message)


def while_shown(handler: Callable[[N, M], None]) -> Callable[[N, M], None]:
    """For a handler of a worker's message: it can land after the widgets are
    gone (the app is quitting), and there is nothing left to update then."""

    @functools.wraps(handler)
    def guarded(self: N, event: M) -> None:
        try:
            handler(self, event)
        except NoMatches:
            if self.app.is_running:
                raise

    return guarded


@dataclass
class CountsChanged(Message, bubble=False):
    counts: dict[str, int]
    orphans: int
    #: the rows an operator should look at, as last counted (every 30 s)
    attention: Attention | None = None
    #: the webhook inbox's last minute (None: it never received anything)
    inbox: InboxStats | None = None


@dataclass
class RowsChanged(Message, bubble=False):
    """A window of the view was read from the ledger."""

    page: Page
    view: View
    offset: int
    cursor: Cursor
    #: The ledger's counts, read with the page (shown together, they agree).
    counts: CountsChanged | None = None
    #: The detail of the row the cursor lands on, read with the page when a
    #: move says which row that is: (its key, its detail).
    landing: tuple[str, Detail | None] | None = None


@dataclass
class DetailLoaded(Message, bubble=False):
    idem: str
    detail: Detail | None
    #: The row the detail showed before, when it left the tab: (key, "now cancelled").
    left: tuple[str, str] | None = None


@dataclass
class TickFinished(Message):
    report: PassReport
    seconds: float
    at: float


@dataclass
class TickFailed(Message):
    error: str
    at: float


@dataclass
class CompletionsRecorded(Message, bubble=False):
    times: list[float]


@dataclass
class ActionFinished(Message):
    """An operator action went through the engine (or was refused)."""

    text: str
    severity: SeverityLevel = "information"


@dataclass
class SubmitProgressed(Message):
    done: int
    total: int


@dataclass
class SubmitFinished(Message):
    text: str
    #: The one prompt's key (None: a file's jobs).
    idem: str | None = None


@dataclass
class SubmitFailed(Message):
    error: str
