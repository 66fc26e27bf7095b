"""Watching the ledger for changes made by anyone: this console's engine, a
cron tick, another console. No I/O but the reader's; the main screen runs the
looks in a worker and decides what to redraw."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.retention import Attention
from reclaim_tui.tui.messages import CountsChanged

__all__ = ["CHEAP_COUNTS", "LedgerWatch", "Look"]

#: Counts read faster than this (seconds) are read again after every change.
CHEAP_COUNTS = 0.05
#: The rows needing attention (a scan of the submitted rows) are counted at
#: least this often (s); after a change or an action, with the counts when the
#: scan is cheap, else at most every ATTENTION_SLOW s (an answered row left
#: the "asking" count 30 s late).
ATTENTION_EVERY = 30.0
ATTENTION_SLOW = 5.0


@dataclass(frozen=True)
class Look:
    """What one look found: whether rows changed, and fresh counts when they were due."""

    changed: bool
    counts: CountsChanged | None


class LedgerWatch:
    """What the console has seen of the ledger, and one look at a time.

    Requests coalesce instead of cancelling each other: a look over a big
    ledger can outlast the 1 s timer, and a forced one (after a pass or an
    action) must not be swallowed by the timer's next plain one.
    """

    def __init__(self, retention_days: float) -> None:
        self._retention_days = retention_days
        self._attention: Attention | None = None
        self._attention_at = float("-inf")
        self._attention_cost = 0.0
        self._seen_update = 0.0
        self._window: tuple[float, int] | None = None
        self._seen_event: int | None = None
        self._counted_at = float("-inf")
        self._counts_cost = 0.0
        self._running = self._wanted = self._force = False

    def request(self, force: bool) -> bool:
        """Ask for a look; True when none is running and the caller must `run` one."""
        self._force = self._force or force
        self._wanted = True
        if self._running:
            return False
        self._running = True
        return True

    async def run(self, look: Callable[[bool], Awaitable[None]]) -> None:
        """Call `look(force)` until no request is left."""
        try:
            while self._wanted:
                self._wanted = False
                force, self._force = self._force, False
                try:
                    await look(force)
                except BaseException:
                    self._force = self._force or force
                    raise
        finally:
            self._running = False

    async def look(self, reader: ConsoleReader, clock: Clock, force: bool) -> Look:
        """Whether rows changed since the last look; the counts when forced,
        after a change, or every 15 s anyway. After a change they are read
        with the rows (so the tabs agree with the table) unless reading them
        is slow (a big ledger): then at most every 2 s."""
        # The window reaches 5 s before the newest change seen: a writer whose
        # clock is a little behind lands there. So the newest row itself is
        # always in it: a change is a newer update, or more rows in the same
        # window than at the last look (counting any row in it made every
        # look of an idle console a change, and re-read counts and window).
        start = self._seen_update - 5.0
        count, latest = await reader.changed_since(start)
        changed = latest > self._seen_update or (
            self._window is not None and self._window[0] == start and self._window[1] != count
        )
        self._window = (start, count)
        self._seen_update = max(self._seen_update, latest)
        now = clock.now()
        since = now - self._counted_at
        cheap = self._counts_cost < CHEAP_COUNTS
        counts = None
        if force or (changed and (cheap or since >= 2.0)) or since > 15:
            self._counted_at = now
            started = time.perf_counter()
            await reader.refresh_liveness()
            waited = now - self._attention_at
            moved = force or changed
            if waited >= ATTENTION_EVERY or (
                moved and (self._attention_cost < CHEAP_COUNTS or waited >= ATTENTION_SLOW)
            ):
                self._attention_at = now
                scan = time.perf_counter()
                self._attention = await reader.attention(self._retention_days)
                self._attention_cost = time.perf_counter() - scan
            seen = await reader.inbox()
            used = seen.last_at is not None or seen.refused
            counts = CountsChanged(*await reader.counts(), self._attention, seen if used else None)
            self._counts_cost = time.perf_counter() - started
        return Look(bool(changed), counts)

    async def completions(self, reader: ConsoleReader) -> list[float]:
        """Completion times recorded since the last call."""
        times, self._seen_event = await reader.completions_since(self._seen_event)
        return times
