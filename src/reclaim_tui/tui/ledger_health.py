"""Whether the console can reach its ledger, as its watch finds out.

A database server restarting, a pooler restarted, a network gone: the
watch's look fails. The console keeps its screen (the rows last read stay
shown), says "ledger unavailable" in the bar and the loop log, and looks
again after a wait that doubles from 1 s to 30 s, as a `run` service does;
the ledger's own connection is dialled again at the next look. The first
look that succeeds says the ledger is back.

    LedgerHealth      the failures in a row and when to look again
    LedgerReach       a look failed, or worked again (posted to the screen)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from textual.css.query import NoMatches
from textual.message import Message

from reclaim_tui.tui.format import shorten_error
from reclaim_tui.tui.widgets.loop_bar import LoopBarState
from reclaim_tui.tui.widgets.loop_log import LoopLog

__all__ = ["LedgerHealth", "LedgerReach", "on_reach", "show"]

#: The first wait after a failed look (s); it doubles up to MAX_WAIT.
FIRST_WAIT = 1.0
MAX_WAIT = 30.0


@dataclass
class LedgerReach(Message):
    """A look failed (`error`), or worked after `failures` that failed (`error` None)."""

    error: str | None
    failures: int
    retry_in: float
    at: float


class LedgerHealth:
    """Failed looks in a row, and the time before which none is tried again
    (on the monotonic clock: a wait, not a time shown)."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic: Callable[[], float] = monotonic
        self.failures = 0
        self._retry_at = float("-inf")

    def waiting(self) -> bool:
        return self._monotonic() < self._retry_at

    def failed(self) -> float:
        """Count a failed look; the seconds until the next one."""
        self.failures += 1
        wait = min(MAX_WAIT, FIRST_WAIT * 2.0 ** (self.failures - 1))
        self._retry_at = self._monotonic() + wait
        return wait

    def succeeded(self) -> int:
        """Count a look that worked; the failures it ended (0: none)."""
        ended, self.failures = self.failures, 0
        self._retry_at = float("-inf")
        return ended


def show(bar: LoopBarState, log: LoopLog, event: LedgerReach) -> None:
    """The bar says it while it lasts; the log says it once, then every
    fifth failed look, and says the ledger back."""
    if event.error is None:
        bar.ledger = ""
        log.line(event.at, f"ledger back after {event.failures} failed look(s)")
        return
    bar.ledger = "unavailable"
    if event.failures == 1 or event.failures % 5 == 0:
        log.line(
            event.at,
            f"ledger unavailable ({event.failures} failed look(s)), looking again in"
            f" {event.retry_in:g}s: {shorten_error(event.error, 200)}",
            error=True,
        )


class _Shows(Protocol):
    """The main screen, as far as this module needs it."""

    bar: LoopBarState

    def query_one(self, selector: type[LoopLog]) -> LoopLog: ...

    def show_bar(self) -> None: ...


def on_reach(screen: _Shows, event: LedgerReach) -> None:
    """The main screen's handler of LedgerReach (its `on_ledger_reach`)."""
    try:
        log = screen.query_one(LoopLog)
    except NoMatches:
        return  # the look outlived its screen: the app is closing
    show(screen.bar, log, event)
    screen.show_bar()
