"""Read-only, windowed queries for the operator console.

The console never loads the ledger: it shows one keyset page at a time,
ordered by an index (DESIGN.md §5 — the ledger may hold millions of rows):

    sort by age in state   jobs(status, state_since, idem), one range per status,
                           merged by a UNION ALL of per-status LIMITed scans
    sort by updated time   jobs(updated_at, idem); a single small status is
                           read through its status range and sorted instead
    free text (3+ chars)   the trigram indexes (core/ledger/schema.py) name the rows
                           that may hold it: read by id and sorted; for shorter
                           or commoner text the walk tests each row's text, and
                           stops at a full page

Every query runs on read-only connections of their own, so the console's
reads never wait for the engine's write lock (WAL: readers never block the
writer, https://www.sqlite.org/wal.html). Interactive page reads and the
slower background reads (counts, change detection) use separate connections
so a count over a million rows never delays a key press.

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.inbox import InboxStats, received_for
from reclaim_tui.core.ledger.inbox import stats as inbox_stats
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.retention import Attention, attention
from reclaim_tui.core.ledger.row_filters import Structured, parse_word, structured_sql
from reclaim_tui.core.ledger.schema import COLUMNS, orphan_sql, row_from_tuple
from reclaim_tui.core.ledger.text_search import TEXT_SQL as _TEXT_SQL
from reclaim_tui.core.ledger.text_search import like_pattern as _like
from reclaim_tui.core.ledger.text_search import text_hits
from reclaim_tui.core.models import Event, Row, Status, StoredResult

__all__ = [
    "SORTS",
    "SORT_COLUMNS",
    "UNINDEXED_SORT_CAP",
    "ConsoleReader",
    "Detail",
    "Page",
    "RowFilter",
    "Sort",
    "View",
    "column_sort",
    "sort_refusal",
]

#: A row's place in a sort: its sort values, then its idem.
Key = tuple[Any, ...]
Direction = Literal["from", "after", "before", "last"]

#: Below this many rows, a status range sorted in memory by SQLite beats a
#: walk of the updated_at index that skips every row of other statuses.
SMALL_STATUS = 20_000
#: "Mark all" and similar bulk reads stop here (an operator batch, not a dump).
MATCH_CAP = 10_000


@dataclass(frozen=True, slots=True)
class Sort:
    """A display order: `column` (then `then`) ascending or descending, ties
    broken by idem. `column` names a jobs column and the Row attribute of
    the same name; the nullable ones sort as '' (NULL breaks a keyset)."""

    column: str
    descending: bool
    label: str
    #: A second column before idem: status sorts by age in state within it.
    then: str | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,) if self.then is None else (self.column, self.then)

    @property
    def indexed(self) -> bool:
        """Whether an index gives this order (else every row of the view is
        read and sorted: UNINDEXED_SORT_CAP)."""
        return self.column in _INDEXED_SORTS


SORTS: tuple[Sort, ...] = (
    Sort("state_since", False, "age in state ↓ (oldest first)"),
    Sort("state_since", True, "age in state ↑ (newest first)"),
    Sort("updated_at", True, "updated ↓ (latest first)"),
    Sort("updated_at", False, "updated ↑ (earliest first)"),
)

#: The table's columns (tui/widgets/ledger_table.py) → (jobs column, then, name).
SORT_COLUMNS: dict[str, tuple[str, str | None, str]] = {
    "idem": ("idem", None, "key"),
    "status": ("status", "state_since", "status"),
    "model": ("model", None, "model"),
    "handle": ("handle", None, "handle"),
    "attempts": ("attempts", None, "attempts"),
    "age": ("state_since", None, "age in state"),
    "next": ("next_at", None, "next poll"),
    "updated": ("updated_at", None, "updated"),
    "error": ("last_error", None, "last error"),
}
#: Sorts an index serves: per status (jobs_status_age, jobs_due: one range a
#: status, merged), or over the whole table (jobs_updated, idem's UNIQUE index).
_PER_STATUS = {"state_since": "jobs_status_age", "status": "jobs_status_age", "next_at": "jobs_due"}
#: next poll is read per status through jobs_due, but that index has no idem:
#: its ties (finished rows keep their last next_at) are sorted, ~0.5 s a page
#: over 920k consumed rows (benchmarks/ledger_fixture.py, 1M rows): capped too.
_INDEXED_SORTS = {"state_since", "status", "updated_at", "idem"}
_NULLABLE = {"handle", "last_error"}
#: A sort no index serves (model, handle, attempts, last error) reads every
#: row of the view's statuses and keeps the page's worth in a top-N sorter:
#: 0.5–1.2 s a page at 1M rows (measured on benchmarks/ledger_fixture.py's
#: ledger; key, status, age and updated: 2–30 ms), for each page moved and
#: each refresh. It is refused over more rows than this: the
#: operator narrows to a tab first (counted by status, which is indexed).
UNINDEXED_SORT_CAP = 100_000


def column_sort(name: str, descending: bool) -> Sort:
    """The sort by table column `name` (SORT_COLUMNS); ValueError names the columns."""
    try:
        column, then, label = SORT_COLUMNS[name]
    except KeyError:
        known = " ".join(SORT_COLUMNS)
        raise ValueError(f"{name!r} is not a column to sort by (one of {known})") from None
    arrow = "descending" if descending else "ascending"
    return Sort(column, descending, f"{label} {arrow}", then)


def _sort_sql(column: str) -> str:
    return f"COALESCE({column}, '')" if column in _NULLABLE else column


def _sort_value(row: Row, column: str) -> Any:
    value = getattr(row, column)
    if column == "status":
        return row.status.value
    return "" if value is None and column in _NULLABLE else value


@dataclass(frozen=True, slots=True)
class RowFilter:
    """A parsed filter: free text over idem, handle and the spec's input, plus
    tokens `status:NAME`, `model:TEXT` and `error:TEXT` (substring, ASCII
    case-insensitive), and the structured words of core/ledger/row_filters.py
    (`label:team=docs`, `age>1h`, `updated<10m`, `attempts>2`). A quoted
    token ("a:b") is text. Text of 3+ characters is looked up in the trigram
    index; 1–2 characters are tested on every row walked."""

    text: str = ""
    statuses: frozenset[Status] = frozenset()
    models: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    #: label:, age/created/updated ranges, attempts (core/ledger/row_filters.py).
    words: tuple[Structured, ...] = ()

    @classmethod
    def parse(cls, query: str) -> RowFilter:
        """Parse the filter line; ValueError names an unknown status or word."""
        words: list[str] = []
        structured: list[Structured] = []
        statuses: set[Status] = set()
        models: list[str] = []
        errors: list[str] = []
        for token in query.split():
            name, sep, value = token.partition(":")
            if len(token) > 1 and token[0] == token[-1] == '"':
                words.append(token[1:-1])
            elif (word := parse_word(token)) is not None:
                structured.append(word)
            elif sep and name.lower() == "status" and value:
                try:
                    statuses.add(Status(value.lower()))
                except ValueError:
                    known = ", ".join(s.value for s in Status)
                    raise ValueError(f"unknown status {value!r} (one of {known})") from None
            elif sep and name.lower() == "model" and value:
                models.append(value)
            elif sep and name.lower() == "error" and value:
                errors.append(value)
            else:
                words.append(token)
        text = " ".join(words)
        return cls(text, frozenset(statuses), tuple(models), tuple(errors), tuple(structured))

    @property
    def empty(self) -> bool:
        return not (self.text or self.statuses or self.models or self.errors or self.words)


@dataclass(frozen=True, slots=True)
class View:
    """What the table shows: a tab (statuses, or the derived orphans), a filter, a sort."""

    statuses: frozenset[Status] | None = None
    orphans: bool = False
    filter: RowFilter = field(default_factory=RowFilter)
    sort: Sort = SORTS[0]

    def effective_statuses(self) -> list[Status] | None:
        """The statuses this view can contain (None: all), in enum order."""
        allowed: set[Status] | None = None
        if self.orphans:
            allowed = {Status.RESERVING}
        if self.statuses is not None:
            allowed = set(self.statuses) if allowed is None else allowed & self.statuses
        if self.filter.statuses:
            wanted = set(self.filter.statuses)
            allowed = wanted if allowed is None else allowed & wanted
        return None if allowed is None else [s for s in Status if s in allowed]

    def key_of(self, row: Row) -> Key:
        return (*(_sort_value(row, c) for c in self.sort.columns), row.idem)


@dataclass(frozen=True, slots=True)
class Page:
    """One window of rows and whether more lie before or after it."""

    rows: list[Row]
    has_before: bool
    has_after: bool


@dataclass(frozen=True, slots=True)
class Detail:
    """Everything the detail pane shows about one row."""

    row: Row
    result: StoredResult | None
    events: list[Event]
    holder_alive: bool | None
    #: the job this one continues (its spec's `previous`), when in the ledger
    previous: Row | None = None
    #: when the first webhook event for its interaction arrived (None: none did)
    event_at: float | None = None
    #: whether this ledger has a webhook inbox (any event kept, ever)
    inbox_used: bool = False


def _predicates(
    view: View, now: float, dead: Sequence[str], hits: str | None = None, dialect: str = "sqlite"
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (besides status and the keyset) and their parameters;
    `hits`: the JSON list of ids the text index names for the filter text."""
    clauses: list[str] = []
    params: list[Any] = []
    if view.orphans:
        where, orphan_params = orphan_sql(now, dead)
        clauses.append(where)
        params += orphan_params
    flt = view.filter
    if flt.text:
        if hits is not None:
            clauses.append("id IN (SELECT CAST(value AS INTEGER) FROM json_each(?))")
            params.append(hits)
        # The indexes only narrow the rows (trigrams, Unicode case folding):
        # the test below decides, so both plans return the same rows.
        clauses.append(_TEXT_SQL)
        params += [_like(flt.text)] * 3
    for column, values in (("model", flt.models), ("last_error", flt.errors)):
        for value in values:
            clauses.append(f"{column} LIKE ? ESCAPE '\\'")
            params.append(_like(value))
    words, word_params = structured_sql(flt.words, now, dialect)
    return [*clauses, *words], [*params, *word_params]


def _keyset(column: str, descending: bool, direction: Direction) -> tuple[str, bool]:
    """(comparison operator, scan descending?) for a page in `direction`."""
    backwards = direction in ("before", "last")
    scan_desc = descending != backwards
    if direction == "from":
        op = "<=" if descending else ">="
    else:
        op = "<" if scan_desc else ">"
    return op, scan_desc


def sort_refusal(view: View, sizes: Mapping[str, int]) -> str | None:
    """Why the view's sort is too costly for its rows (UNINDEXED_SORT_CAP), or None."""
    statuses = view.effective_statuses()
    rows = sum(sizes.get(s.value, 0) for s in (statuses if statuses is not None else Status))
    if view.sort.indexed or rows <= UNINDEXED_SORT_CAP:
        return None
    return (
        f"sorting {rows:,} rows by {view.sort.label.rsplit(' ', 1)[0]} reads every one (no"
        f" index): pick a tab of at most {UNINDEXED_SORT_CAP:,} rows first"
    )


def _page_sql(
    view: View,
    now: float,
    dead: Sequence[str],
    sizes: Mapping[str, int],
    start: Key | None,
    direction: Direction,
    limit: int,
    hits: str | None = None,
    dialect: str = "sqlite",
) -> tuple[str, list[Any]]:
    sort = view.sort
    op, scan_desc = _keyset(sort.column, sort.descending, direction)
    way = "DESC" if scan_desc else "ASC"
    exprs = [*(_sort_sql(c) for c in sort.columns), "idem"]
    order = ", ".join(f"{e} {way}" for e in exprs)
    extra, extra_params = _predicates(view, now, dead, hits, dialect)
    keyset: list[str] = []
    keyset_params: list[Any] = []
    if start is not None and direction != "last":
        marks = ", ".join("?" * len(exprs))
        keyset, keyset_params = [f"({', '.join(exprs)}) {op} ({marks})"], list(start)
    statuses = view.effective_statuses()
    if statuses is not None and not statuses:
        return "SELECT " + COLUMNS + " FROM jobs WHERE FALSE", []
    by_id = hits is not None and bool(view.filter.text)
    per_status = _PER_STATUS.get(sort.column)
    small = statuses is not None and sum(sizes.get(s.value, 0) for s in statuses) <= SMALL_STATUS
    by_status = not by_id and (per_status is not None or (sort.indexed and small))
    if by_status:
        index = per_status or "jobs_status_age"
        subs, params = [], []
        for status in statuses if statuses is not None else list(Status):
            where = " AND ".join(["status = ?", *extra, *keyset])
            subs.append(
                f"SELECT * FROM (SELECT {COLUMNS} FROM jobs INDEXED BY {index}"
                f" WHERE {where} ORDER BY {order} LIMIT ?) AS by_{status.value}"
            )
            params += [status.value, *extra_params, *keyset_params, limit]
        return " UNION ALL ".join(subs) + f" ORDER BY {order} LIMIT ?", [*params, limit]
    clauses = list(extra)
    params = list(extra_params)
    if statuses is not None:
        clauses.insert(0, "status IN (SELECT value FROM json_each(?))")
        params.insert(0, json.dumps([s.value for s in statuses]))
    where = " AND ".join([*clauses, *keyset]) or "TRUE"
    # Text-index candidates are read by id (NOT INDEXED leaves only rowid
    # lookups) and sorted: few rows, wherever they sit in the order.
    source = "NOT INDEXED" if by_id else "INDEXED BY jobs_updated"
    if not by_id and sort.column != "updated_at":
        source = ""  # idem's UNIQUE index, or none (UNINDEXED_SORT_CAP)
    sql = f"SELECT {COLUMNS} FROM jobs {source} WHERE {where} ORDER BY {order}"
    return sql + " LIMIT ?", [*params, *keyset_params, limit]


class ConsoleReader:
    """The console's read side: two read-only connections on one ledger file."""

    def __init__(self, interactive: Ledger, background: Ledger, clock: Clock) -> None:
        self._fast = interactive
        self._slow = background
        self.clock = clock
        self.sizes: dict[str, int] = {}
        self._dead: list[str] = []

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
        await self._fast.close()
        await self._slow.close()

    async def interrupt(self) -> None:
        """Abort a page query still running (a filter scan the operator replaced)."""
        await self._fast.interrupt()

    # -- pages -------------------------------------------------------------------------
    async def page(
        self, view: View, start: Key | None = None, direction: Direction = "from", limit: int = 100
    ) -> Page:
        """A window of `limit` rows in display order, starting at `start`.

        "from": at or after start (a refresh keeps its place); "after"/"before":
        the next/previous window; "last": the final window.
        """
        now = self.clock.now()
        hits = await text_hits(self._fast, view.filter.text)
        dialect = self._fast.dialect
        sql, params = _page_sql(
            view, now, self._dead, self.sizes, start, direction, limit + 1, hits, dialect
        )
        rows = [row_from_tuple(r) for r in await _fetch(self._fast, sql, params)]
        more = len(rows) > limit
        rows = rows[:limit]
        if direction in ("before", "last"):
            rows.reverse()
            return Page(rows, has_before=more, has_after=direction == "before")
        if start is None:
            return Page(rows, has_before=False, has_after=more)
        if direction == "after":
            return Page(rows, has_before=True, has_after=more)
        sql, params = _page_sql(
            view, now, self._dead, self.sizes, start, "before", 1, hits, dialect
        )
        before = bool(await _fetch(self._fast, sql, params))
        return Page(rows, has_before=before, has_after=more)

    async def iter_view(self, view: View, batch: int = 2000) -> AsyncIterator[list[Row]]:
        """Every row of the view in display order, a page at a time (exports)."""
        start: Key | None = None
        direction: Direction = "from"
        while True:
            hits = await text_hits(self._slow, view.filter.text)
            now, dialect = self.clock.now(), self._slow.dialect
            sql, params = _page_sql(
                view, now, self._dead, self.sizes, start, direction, batch, hits, dialect
            )
            rows = [row_from_tuple(r) for r in await _fetch(self._slow, sql, params)]
            if not rows:
                return
            yield rows
            start, direction = view.key_of(rows[-1]), "after"

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
        now, dialect = self.clock.now(), self._slow.dialect
        clauses, params = _predicates(view, now, self._dead, hits, dialect)
        statuses = view.effective_statuses()
        if statuses is not None:
            clauses.insert(0, "status IN (SELECT value FROM json_each(?))")
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
            "SELECT COUNT(*), MAX(updated_at) FROM (SELECT updated_at FROM jobs"
            " INDEXED BY jobs_updated WHERE updated_at > ? LIMIT 10000) AS recent",
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
            "SELECT id, at, to_status, from_status FROM events"
            " WHERE id > ? ORDER BY id LIMIT 50000",
            [event_id],
        )
        times = [r[1] for r in rows if r[2] == "done" and r[3] != "done"]
        return times, int(rows[-1][0]) if rows else event_id

    # -- one row ----------------------------------------------------------------------
    async def detail(self, idem: str) -> Detail | None:
        row = await self._fast.get(idem)
        if row is None:
            return None
        result = await self._fast.result(idem)
        events = await self._fast.events(idem)
        alive = holder_alive(row.lease_owner) if row.lease_owner else None
        key = row.job.previous
        previous = await self._fast.get(key) if key else None
        event_at = await received_for(self._fast, row.handle) if row.handle else None
        used = bool(await self._fast.select("SELECT 1 FROM inbox LIMIT 1"))
        return Detail(row, result, events, alive, previous, event_at, used)

    async def rows_by_idem(self, idems: Sequence[str]) -> dict[str, Row]:
        return await self._fast.get_many(idems)


async def _fetch(ledger: Ledger, sql: str, params: Sequence[Any]) -> list[Any]:
    return await ledger.select(sql, params)
