"""The main screen's reads of the ledger: one window of the view, one row's
detail, and the watch for changes made by anyone.

`LedgerFeed` runs its reads as Textual workers on the screen it serves and
posts what they found there (past tense, messages.py):

    page / detail  one keyset window / one row's detail → RowsChanged, DetailLoaded
    watch          every `watch_every` s and after every change (watching.py):
                   once the details keys are reading are shown,
                   → a new window with the counts read with it (RowsChanged),
                   or the counts (CountsChanged) and a redraw; then
                   CompletionsRecorded; a look that failed → LedgerReach,
                   and the first one that works again (ledger_health.py)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from functools import partial

from textual.css.query import NoMatches
from textual.widget import Widget
from textual.worker import Worker

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.errors import LedgerError
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.ledger_health import LedgerHealth, LedgerReach
from reclaim_tui.tui.messages import (
    CompletionsRecorded,
    CountsChanged,
    DetailLoaded,
    RowsChanged,
)
from reclaim_tui.tui.state import ConsoleState, Cursor, Move
from reclaim_tui.tui.watching import LedgerWatch
from reclaim_tui.tui.worker_wait import finished, painted

__all__ = ["LedgerFeed"]


class LedgerFeed:
    """Reads for `screen` through the app's reader (none until `follow`).

    `state` is the screen's: the feed reads the view it describes and never
    changes it; `redraw` is the screen's way to show new ages on the same rows.
    """

    def __init__(
        self,
        screen: Widget,
        state: ConsoleState,
        config: ConsoleConfig,
        redraw: Callable[[], None],
    ) -> None:
        self._screen = screen
        self._state = state
        self._config = config
        self._redraw = redraw
        self._watch = LedgerWatch(config.settings.retention_days)
        self._page: tuple[Move, Worker[None]] | None = None
        #: The read of a window a key asked for, whose cursor lands on a new row.
        self._move: Worker[None] | None = None
        self.reader: ConsoleReader | None = None
        self._watching = False
        #: whether the looks reach the ledger (tui/ledger_health.py)
        self.health = LedgerHealth()

    def opened(self) -> ConsoleReader:
        """The reader, for a read that cannot come before the app opened it."""
        assert self.reader is not None, "no read before the app opened the ledger"
        return self.reader

    def _run(
        self, work: Callable[[], Coroutine[None, None, None]], group: str, exclusive: bool = False
    ) -> Worker[None]:
        """A worker on the screen, as `@work(group=…, exclusive=…)` would start it."""
        return self._screen.run_worker(work, group=group, exclusive=exclusive)

    @property
    def dead(self) -> list[str]:
        """Lease holders known dead (their rows are orphans)."""
        return self.reader.dead if self.reader is not None else []

    def follow(self, reader: ConsoleReader) -> Worker[None]:
        """Read through `reader`: the first page, then watch the ledger."""
        self.reader = reader  # now: a read asked before the first page uses it
        return self._run(partial(self._follow, reader), group="boot")

    async def _follow(self, reader: ConsoleReader) -> None:
        self.reader = reader
        # A tab or filter chosen before the first page arrives replaces its read:
        # the watch starts all the same (the replacing read shows the rows).
        await finished(self.load_page("first", cursor="top"))
        self.watch(force=True)
        if not self._watching:  # one timer, however many ledgers are followed
            self._watching = True
            self._screen.set_interval(self._config.watch_every, self.watch)

    def leave(self) -> None:
        """Stop reading this ledger (`:ledger`): its reads in flight are
        cancelled and what was seen of it forgotten; `follow` reads the next."""
        for group in ("boot", "page", "watch", "detail"):
            self._screen.workers.cancel_group(self._screen, group)
        self._watch = LedgerWatch(self._config.settings.retention_days)
        self._page = self._move = None
        self.reader = None

    # -- a window, a row ---------------------------------------------------------------
    def load_page(
        self, move: Move, cursor: Cursor = "keep", counts: CountsChanged | None = None
    ) -> Worker[None]:
        """Read the window `move` asks for; the cursor goes to `cursor`;
        `counts`, read with it, are shown with it.

        The window past an edge that is already being read is not read again
        (a key held down at the edge would restart it for ever)."""
        paging = self._page
        if move in ("after", "before") and paging and paging[0] == move:
            if not paging[1].is_finished:
                return paging[1]
        load = partial(self._load_page, move, cursor, counts)
        worker = self._run(load, group="page", exclusive=True)
        self._page = (move, worker)
        if cursor != "keep":
            self._move = worker
        return worker

    @property
    def move(self) -> Worker[None] | None:
        """The window a key asked for while it is not shown yet (tui/key_order.py)."""
        move = self._move
        return move if move is not None and not move.is_finished else None

    async def _load_page(self, move: Move, cursor: Cursor, counts: CountsChanged | None) -> None:
        reader, window = self.opened(), self._state.window
        view, start, direction = self._state.page_query(move)
        for attempt in range(2):
            try:
                size = self._config.page_size
                page = await reader.page(view, start, direction, size, landing=_landing(cursor))
                break
            except asyncio.CancelledError:
                self._post_counts(counts)  # the page that replaced this one has none
                if view.filter.text or any(w.kind == "cost" for w in view.filter.words):
                    await reader.interrupt()  # a slow scan the operator replaced
                raise
            except (LedgerError, ValueError) as exc:
                if "interrupt" not in str(exc) or attempt:
                    self._screen.notify(f"ledger read failed: {exc}", severity="error")
                    self._post_counts(counts)
                    return
        at = self._state.page_offset(window, move, len(page.rows))
        # The detail of the row a move's cursor lands on is read with its
        # window: shown with the window, the two are drawn in one frame
        # instead of the detail a frame later (after a worker of its own).
        landing = page.landing if cursor != "keep" else None
        self._screen.post_message(RowsChanged(page, view, at, cursor, counts, landing))
        if cursor != "keep":  # a move ends when its cursor is on screen (key_order.py)
            await painted(self._screen.app, self._screen)

    def _post_counts(self, counts: CountsChanged | None) -> None:
        if counts is not None:
            self._screen.post_message(counts)

    def load_detail(self, idem: str, left: str | None = None) -> Worker[None]:
        """Read `idem`'s detail; `left`: the row shown before, which left the tab."""
        return self._run(partial(self._load_detail, idem, left), group="detail", exclusive=True)

    async def _load_detail(self, idem: str, left: str | None) -> None:
        reader = self.opened()
        for attempt in range(2):
            try:
                detail = await reader.detail(idem)
                gone = (await reader.rows_by_idem([left])).get(left) if left else None
                break
            except (LedgerError, ValueError) as exc:
                # A replaced filter scan interrupts the whole page connection,
                # and with it a detail read that shared it: read it again.
                if "interrupt" not in str(exc) or attempt:
                    self._screen.notify(f"ledger read failed: {exc}", severity="error")
                    return
        where = None
        if left:
            where = (left, f"now {gone.status.value}" if gone else "gone from the ledger")
        self._screen.post_message(DetailLoaded(idem, detail, where))

    # -- the watch -------------------------------------------------------------------------
    def watch(self, force: bool = False) -> None:
        """Look at the ledger again, now or right after the look in progress
        (while the ledger is unreachable, only once its wait is over, or
        when forced: ctrl+r)."""
        if not force and self.health.waiting():
            return
        if self._watch.request(force):
            self._run(self._watch_loop, group="watch")

    async def _watch_loop(self) -> None:
        await self._watch.run(self._look)

    async def _look(self, force: bool) -> None:
        reader = self.reader
        if reader is None:
            return
        try:
            look = await self._watch.look(reader, self._config.clock, force)
            completions = await self._watch.completions(reader)
        except LedgerError as exc:
            # Its server restarting, a pooler restarted, a right revoked:
            # the screen keeps what it shows and looks again later
            # (ledger_health.py); the reader dials again at the next look.
            wait = self.health.failed()
            now = self._config.clock.now()
            failures = self.health.failures
            self._screen.post_message(LedgerReach(str(exc), failures, wait, now))
            return
        await self._after_keys()
        if failures := self.health.succeeded():
            self._screen.post_message(LedgerReach(None, failures, 0.0, self._config.clock.now()))
        # The rows are read again only with the counts, and go with them:
        # shown apart, the tabs and the table would disagree. (Counts not
        # due yet are due within 2 s, while the change is still reported.)
        # A page the operator asked for is fresh: a refresh would cancel it.
        due = force or (look.changed and look.counts is not None)
        reload = due and not self._paging()
        if reload:
            self.load_page("from", cursor="keep", counts=look.counts)
        else:
            self._post_counts(look.counts)
            if not self._paging():
                try:
                    self._redraw()
                except NoMatches:
                    # The look outlived its screen: the app is closing and the
                    # screen's widgets are gone (failed a console test under load).
                    return
        self._screen.post_message(CompletionsRecorded(completions))

    async def _after_keys(self) -> None:
        """Wait for the rows' details keys are reading now to be shown and
        painted: what the look found is shown after that key's frame, not in
        it (a key's time on the UI thread). Those reads take milliseconds;
        only the reads in flight now are waited for, so keys held down do
        not hold the look back for longer."""
        reading = [w for w in self._screen.workers if w.group == "detail" and not w.is_finished]
        for worker in reading:
            await finished(worker)
        if reading:
            await painted(self._screen.app, self._screen)

    def _paging(self) -> bool:
        return any(w.group == "page" and not w.is_finished for w in self._screen.workers)


def _landing(cursor: Cursor) -> int | None:
    """The window's row a move's cursor lands on (negative: from its end),
    whose detail is read with the window; None for "keep" (the screen reads
    a highlighted row's detail when it needs it)."""
    if cursor == "keep":
        return None
    if cursor == "top":
        return 0
    return -1 if cursor == "bottom" else cursor
