"""What the console's table shows, as values: a sort, a parsed filter, a
view (tab + filter + sort), a page of rows and a row's detail.

Pure data and parsing; `core/ledger/console/page_sql.py` turns a view into SQL and
`core/ledger/console/queries.py` (ConsoleReader) reads it. Part of the core: no Textual.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reclaim_tui.core.ledger.console.row_filters import Structured, parse_word
from reclaim_tui.core.models import Event, Row, Status, StoredResult

__all__ = [
    "SORTS",
    "SORT_COLUMNS",
    "UNINDEXED_SORT_CAP",
    "Detail",
    "Direction",
    "Key",
    "Page",
    "RowFilter",
    "Sort",
    "View",
    "column_sort",
    "sort_refusal",
    "sort_sql",
]

#: A row's place in a sort: its sort values, then its idem. Ties are in
#: key order on PostgreSQL, in id order on SQLite: there the key names the
#: row whose id the page query looks up (core/ledger/console/page_sql.py).
Key = tuple[Any, ...]
Direction = Literal["from", "after", "before", "last"]


@dataclass(frozen=True, slots=True)
class Sort:
    """A display order: `column` (then `then`) ascending or descending, ties
    broken by idem (the time sorts' by id on SQLite: page_sql.tie_column).
    `column` names a jobs column and the Row attribute of the same name; the
    nullable ones sort as '' (NULL breaks a keyset)."""

    column: str
    descending: bool
    label: str
    #: A second column before the tie: status sorts by age in state within it.
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

#: The table's columns (tui/widgets/table_cells.py) → (jobs column, then, name).
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
#: next poll is read per status through jobs_due, but that index has no idem:
#: its ties (finished rows keep their last next_at) are sorted, slow on a
#: big tab of finished rows (benchmarks/ledger_fixture.py): capped too.
_INDEXED_SORTS = {"state_since", "status", "updated_at", "idem"}
_NULLABLE = {"handle", "last_error"}
#: A sort no index serves (model, handle, attempts, last error) reads every
#: row of the view's statuses and keeps the page's worth in a top-N sorter,
#: for each page moved and each refresh: on a big tab, far slower than the
#: indexed sorts (key, status, age and updated). It is refused over more rows than this: the
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


def sort_sql(column: str) -> str:
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
    case-insensitive), and the structured words of core/ledger/console/row_filters.py
    (`label:team=docs`, `age>1h`, `updated<10m`, `attempts>2`, `cost>0.5`). A quoted
    token ("a:b") is text. Text of 3+ characters is looked up in the trigram
    index; 1–2 characters are tested on every row walked."""

    text: str = ""
    statuses: frozenset[Status] = frozenset()
    models: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    #: label:, age/created/updated ranges, attempts, cost (core/ledger/console/row_filters.py).
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
    """One window of rows and whether more lie before or after it; when
    asked for, the key and detail of the row a cursor lands on, read with it."""

    rows: list[Row]
    has_before: bool
    has_after: bool
    landing: tuple[str, Detail | None] | None = field(default=None, compare=False)


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
