"""Read-only, windowed queries for the operator console.

The console never loads the ledger: it shows one keyset page at a time,
ordered by an index (DESIGN.md §5 — the ledger may hold millions of rows):

    sort by age in state   jobs(status, state_since), ties by id (SQLite; by idem
                           on PostgreSQL), one range per status,
                           merged by a UNION ALL of per-status LIMITed scans
    sort by updated time   jobs(updated_at), ties likewise; a single small status is
                           read through its status range and sorted instead
    free text (3+ chars)   the trigram indexes (core/ledger/sqlite/schema.py) name the rows
                           that may hold it: read by id and sorted; for shorter
                           or commoner text the walk tests each row's text, and
                           stops at a full page

Every query runs on read-only connections of their own, so the console's
reads never wait for the engine's write lock (WAL: readers never block the
writer, https://www.sqlite.org/wal.html). Interactive page reads and the
slower background reads (counts, change detection) use separate connections
so a count over a million rows never delays a key press.

What the console shows (views, pages, details) is core/ledger/console/views.py; the
SQL of a page, core/ledger/console/page_sql.py. This module is part of the core: it
must not import Textual.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.console.page_sql import page_sql as _page_sql
from reclaim_tui.core.ledger.console.page_sql import predicates
from reclaim_tui.core.ledger.console.text_search import text_hits
from reclaim_tui.core.ledger.console.views import Detail, Direction, Key, Page, View
from reclaim_tui.core.ledger.dialect import DIALECTS, Sql
from reclaim_tui.core.ledger.inbox import InboxStats
from reclaim_tui.core.ledger.inbox import stats as inbox_stats
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.reads import EVENTS_SQL, GET_SQL, RESULT_SQL, stored_result
from reclaim_tui.core.ledger.retention import Attention, attention
from reclaim_tui.core.ledger.schema import row_from_tuple
from reclaim_tui.core.models import Event, Row
from reclaim_tui.errors import LedgerError

if TYPE_CHECKING:
    from reclaim_tui.core.costs import PriceTable

__all__ = ["MATCH_CAP", "ConsoleReader"]

#: "Mark all" and similar bulk reads stop here (an operator batch, not a dump).
MATCH_CAP = 10_000


class ConsoleReader:
    """The console's read side: two read-only connections on one ledger file."""

    def __init__(self, interactive: Ledger, background: Ledger, clock: Clock) -> None:
        self._fast = interactive
        self._slow = background
        self.clock = clock
        self.sizes: dict[str, int] = {}
        self._dead: list[str] = []
        #: The price table a filter's `cost` word prices rows at (the console's,
        #: the one `$` sums with); None: not read (a `cost` word is refused).
        self.prices: PriceTable | None = None

    @classmethod
    async def open(
        cls, path: str | Path, *, clock: Clock, busy_timeout: float = 10.0
    ) -> ConsoleReader:
        """Open both connections read-only; the ledger must exist."""
        fast = await open_ledger(
            path, clock=clock, busy_timeout=busy_timeout, readonly=True, create=False
        )
        try:
            slow = await open_ledger(
                path, clock=clock, busy_timeout=busy_timeout, readonly=True, create=False
            )
        except BaseException:
            await fast.close()
            raise
        return cls(fast, slow, clock)

    @property
    def background(self) -> Ledger:
        """The connection for reads off the table's path (counts, costs, charts)."""
        return self._slow

    async def close(self) -> None:
        try:
            await self._fast.close()
        finally:  # failed or cancelled: the other's thread must stop too
            await self._slow.close()

    async def interrupt(self) -> None:
        """Abort a page query still running (a filter scan the operator replaced)."""
        await self._fast.interrupt()

    # -- pages -------------------------------------------------------------------------
    async def page(
        self,
        view: View,
        start: Key | None = None,
        direction: Direction = "from",
        limit: int = 100,
        landing: int | None = None,
    ) -> Page:
        """A window of `limit` rows in display order, starting at `start`.

        "from": at or after start (a refresh keeps its place); "after"/"before":
        the next/previous window; "last": the final window. `landing`: the
        window's row a cursor lands on (negative: from its end), whose detail
        is read in the same call to the ledger (`Page.landing`; None when it
        could not be read: the caller reads it as any other row's).
        """
        now = self.clock.now()
        hits = await text_hits(self._fast, view.filter.text)
        await self._priced(self._fast, view)
        dialect, prices = self._fast.dialect, self.prices

        def read(towards: Direction, rows: int) -> tuple[str, list[Any]]:
            return _page_sql(
                view, now, self._dead, self.sizes, start, towards, rows, hits, dialect, prices
            )

        reads = [read(direction, limit + 1)]
        if direction == "from" and start is not None:
            reads.append(read("before", 1))  # whether a row comes before: with the window
        if landing is None:
            found, *before = await self._fast.select_each(reads)
            return _paged(found, before, direction, start, limit)
        landed: list[str] = []

        def detail_reads(answers: list[list[Any]]) -> Sequence[tuple[str, Sequence[Any]]]:
            # Run in the ledger's thread (SQLite): the landing row's key, off its tuple.
            shown = answers[0][:limit]
            if not shown or landing is None:
                return ()
            index = max(0, min(landing if landing >= 0 else len(shown) + landing, len(shown) - 1))
            if direction in ("before", "last"):
                index = len(shown) - 1 - index  # read in reverse display order
            landed.append(row_from_tuple(shown[index][:-1]).idem)
            return _detail_reads(landed[0])

        (found, *before), details = await self._fast.select_then(reads, detail_reads)
        page = _paged(found, before, direction, start, limit)
        if not landed or details is None:
            return page
        try:
            return replace(page, landing=(landed[0], await self._detail_of(details)))
        except (LedgerError, ValueError):  # the row followed up: read as any row's
            return page

    async def iter_view(self, view: View, batch: int = 2000) -> AsyncIterator[list[Row]]:
        """Every row of the view in display order, a page at a time (exports)."""
        start: Key | None = None
        direction: Direction = "from"
        while True:
            hits = await text_hits(self._slow, view.filter.text)
            await self._priced(self._slow, view)
            now, dialect, prices = self.clock.now(), self._slow.dialect, self.prices
            sql, params = _page_sql(
                view, now, self._dead, self.sizes, start, direction, batch, hits, dialect, prices
            )
            rows = [row_from_tuple(r[:-1]) for r in await _fetch(self._slow, sql, params)]
            if not rows:
                return
            yield rows
            start, direction = view.key_of(rows[-1]), "after"

    async def _priced(self, ledger: Ledger, view: View) -> None:
        """The price table where a `cost` word's SQL reads it on `ledger`."""
        if self.prices is not None and any(w.kind == "cost" for w in view.filter.words):
            # Here: the price table's modules are not `status`'s start-up cost.
            from reclaim_tui.core.cost_sql import install_prices

            await install_prices(ledger, self.prices)

    async def matching_idems(self, view: View, cap: int = MATCH_CAP) -> tuple[list[str], bool]:
        """Keys of the view's rows, at most `cap`; True if the cap cut the list."""
        out: list[str] = []
        async for rows in self.iter_view(view, batch=min(cap + 1, 5000)):
            out.extend(r.idem for r in rows)
            if len(out) > cap:
                return out[:cap], True
        return out, False

    async def view_ids_sql(self, view: View) -> tuple[str, list[Any]]:
        """`SELECT id FROM jobs WHERE …` of every row the view shows (its
        statuses, orphans, filter text and tokens), for totals over it (costs)."""
        hits = await text_hits(self._slow, view.filter.text)
        await self._priced(self._slow, view)
        now, dialect = self.clock.now(), self._slow.dialect
        clauses, params = predicates(view, now, self._dead, hits, dialect, self.prices)
        statuses = view.effective_statuses()
        if statuses is not None:
            clauses.insert(0, f"status IN (SELECT value FROM {DIALECTS[dialect].each()})")
            params.insert(0, json.dumps([s.value for s in statuses]))
        return f"SELECT id FROM jobs WHERE {' AND '.join(clauses) or 'TRUE'}", params

    # -- the background refresh ----------------------------------------------------------
    async def refresh_liveness(self) -> list[str]:
        """Lease holders provably dead (their leases count as expired)."""
        self._dead = await self._slow.dead_holders(me="")
        return self._dead

    @property
    def dead(self) -> list[str]:
        return list(self._dead)

    async def counts(self) -> tuple[dict[str, int], int]:
        """Rows per status and the number of orphans (reserving, create maybe
        sent, nobody live holding it — or held for an operator)."""
        counts = await self._slow.counts()
        self.sizes = {status: n for status, (n, _) in counts.items()}
        orphans = await self._slow.orphan_count(dead=self._dead)
        return dict(self.sizes), orphans

    async def inbox(self) -> InboxStats:
        """The webhook inbox's last minute, last event and refusals."""
        return await inbox_stats(self._slow, self.clock.now())

    async def attention(self, retention_days: float) -> Attention:
        """Submitted rows past the retention, asking, or in an unknown status."""
        return await attention(self._slow, retention_days)

    async def changed_since(self, since: float) -> tuple[int, float]:
        """(rows updated after `since`, up to 10,000; the latest updated_at seen)."""
        rows = await _fetch(
            self._slow,
            _CHANGED_SQL,
            [since],
        )
        count, latest = rows[0]
        return int(count), float(latest) if latest is not None else since

    async def completions_since(self, event_id: int | None) -> tuple[list[float], int]:
        """Times of submitted → done events after `event_id` (None: the recent
        tail of the log), and the newest event id."""
        if event_id is None:
            top = await _fetch(self._slow, "SELECT COALESCE(MAX(id), 0) FROM events", [])
            event_id = max(0, int(top[0][0]) - 50_000)
        rows = await _fetch(
            self._slow,
            _COMPLETIONS_SQL,
            [event_id],
        )
        times = [r[1] for r in rows if r[2] == "done" and r[3] != "done"]
        return times, int(rows[-1][0]) if rows else event_id

    # -- one row ----------------------------------------------------------------------
    async def detail(self, idem: str) -> Detail | None:
        """The row, its result, its events, when its interaction's first
        event came and whether the inbox is used: read together, in one
        call to the ledger (SQLite: one hand-off to its connection's thread
        on a key's path, not one a read); the row it follows up, if any,
        after."""
        return await self._detail_of(await self._fast.select_each(_detail_reads(idem)))

    async def _detail_of(self, answers: list[list[Any]]) -> Detail | None:
        """The detail from `_detail_reads`' answers (and the row followed up, read now)."""
        found, stored, timeline, received, inbox = answers
        if not found:
            return None
        row = row_from_tuple(found[0])
        events = [Event(*r) for r in timeline]
        alive = holder_alive(row.lease_owner) if row.lease_owner else None
        key = row.job.previous
        previous = await self._fast.get(key) if key else None
        event_at = received[0][0] if row.handle and received else None
        return Detail(row, stored_result(stored), events, alive, previous, event_at, bool(inbox))

    async def rows_by_idem(self, idems: Sequence[str]) -> dict[str, Row]:
        return await self._fast.get_many(idems)


_CHANGED_SQL = Sql(
    lambda d: (
        "SELECT COUNT(*), MAX(updated_at) FROM (SELECT updated_at FROM"
        f" jobs{d.indexed_by('jobs_updated')} WHERE updated_at > {d.p} LIMIT 10000) AS recent"
    )
)
#: when the first event for the row's interaction arrived (NULL: none, or no handle)
_RECEIVED_SQL = Sql(
    lambda d: (
        "SELECT MIN(received_at) FROM inbox"
        f" WHERE interaction = (SELECT handle FROM jobs WHERE idem = {d.p})"
    )
)
_COMPLETIONS_SQL = Sql(
    lambda d: (
        "SELECT id, at, to_status, from_status FROM events"
        f" WHERE id > {d.p} ORDER BY id LIMIT 50000"
    )
)


async def _fetch(ledger: Ledger, sql: str, params: Sequence[Any]) -> list[Any]:
    return await ledger.select(sql, params)


def _detail_reads(idem: str) -> tuple[tuple[str, Sequence[Any]], ...]:
    """A row's detail's reads (`ConsoleReader._detail_of` reads their answers)."""
    return (
        (GET_SQL, (idem,)),
        (RESULT_SQL, (idem,)),
        (EVENTS_SQL, (idem, 10_000)),
        (_RECEIVED_SQL, (idem,)),
        ("SELECT 1 FROM inbox LIMIT 1", ()),
    )


def _paged(
    found: list[Any], before: list[list[Any]], direction: Direction, start: Key | None, limit: int
) -> Page:
    """The page from its reads' answers (`ConsoleReader.page`)."""
    rows = [row_from_tuple(r[:-1]) for r in found]
    more = len(rows) > limit
    rows = rows[:limit]
    if direction in ("before", "last"):
        rows.reverse()
        return Page(rows, has_before=more, has_after=direction == "before")
    if start is None:
        return Page(rows, has_before=False, has_after=more)
    if direction == "after":
        return Page(rows, has_before=True, has_after=more)
    return Page(rows, has_before=bool(before[0]), has_after=more)
