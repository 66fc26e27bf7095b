"""A console view as SQL: the keyset page query over the index its sort and
size call for, and the WHERE clauses of its tab and filter.

Built for the ledger's dialect (core/ledger/dialect.py: SQLite's `INDEXED
BY` hints have no PostgreSQL counterpart). `core/ledger/console/queries.py` runs
what this builds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reclaim_tui.core.ledger.console.row_filters import structured_sql
from reclaim_tui.core.ledger.console.text_search import TEXT_SQL, like_pattern
from reclaim_tui.core.ledger.console.views import Direction, Key, Sort, View, sort_sql
from reclaim_tui.core.ledger.dialect import DIALECTS, Dialect
from reclaim_tui.core.ledger.schema import COLUMNS, orphan_sql
from reclaim_tui.core.models import Status

if TYPE_CHECKING:
    from reclaim_tui.core.costs import PriceTable

__all__ = ["PAGE_COLUMNS", "SMALL_STATUS", "page_sql", "predicates", "tie_column"]

#: What a page query returns: a row's COLUMNS, then its id (the tie-break
#: SQLite's per-status ranges are merged by; the reader drops it).
PAGE_COLUMNS = COLUMNS + ", id"

#: Below this many rows, a status range sorted in memory by SQLite beats a
#: walk of the updated_at index that skips every row of other statuses.
SMALL_STATUS = 20_000

#: Sorts an index serves per status (jobs_status_age, jobs_due: one range a
#: status, merged); the others are served over the whole table (jobs_updated,
#: idem's UNIQUE index).
_PER_STATUS = {"state_since": "jobs_status_age", "status": "jobs_status_age", "next_at": "jobs_due"}
#: Sorts by a time: their ties are broken by the dialect's `tie` (SQLite:
#: the id its time indexes end with). The others (the key, unindexed
#: columns) break ties by the key on both engines.
_BY_TIME = {"state_since", "status", "updated_at", "next_at"}


def predicates(
    view: View,
    now: float,
    dead: Sequence[str],
    hits: str | None = None,
    dialect: str = "sqlite",
    prices: PriceTable | None = None,
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (besides status and the keyset) and their parameters;
    `hits`: the JSON list of ids the text index names for the filter text;
    `prices`: the table a `cost` word prices rows at."""
    d = DIALECTS[dialect]
    clauses: list[str] = []
    params: list[Any] = []
    if view.orphans:
        where, orphan_params = orphan_sql(now, dead)
        clauses.append(where.of(d))
        params += orphan_params
    flt = view.filter
    if flt.text:
        if hits is not None:
            clauses.append(f"id IN (SELECT CAST(value AS INTEGER) FROM {d.each()})")
            params.append(hits)
        # The indexes only narrow the rows (trigrams, Unicode case folding):
        # the test below decides, so both plans return the same rows.
        clauses.append(TEXT_SQL.of(d))
        params += [like_pattern(flt.text)] * 3
    for column, values in (("model", flt.models), ("last_error", flt.errors)):
        for value in values:
            clauses.append(f"{column} {d.like} {d.p} ESCAPE '\\'")
            params.append(like_pattern(value))
    words, word_params = structured_sql(flt.words, now, dialect, prices)
    return [*clauses, *words], [*params, *word_params]


def tie_column(sort: Sort, dialect: str) -> str:
    """The column that orders `sort`'s ties in `dialect`: `id` or `idem`."""
    return DIALECTS[dialect].tie if sort.column in _BY_TIME else "idem"


def _keyset(column: str, descending: bool, direction: Direction) -> tuple[str, bool]:
    """(comparison operator, scan descending?) for a page in `direction`."""
    backwards = direction in ("before", "last")
    scan_desc = descending != backwards
    if direction == "from":
        op = "<=" if descending else ">="
    else:
        op = "<" if scan_desc else ">"
    return op, scan_desc


def _anchor(tie: str, p: str, scan_desc: bool) -> str:
    """The keyset's last value from the key's last member, the anchor row's
    key. Ordered by the key, the key itself; ordered by id, the id of the
    row with that key. An anchor deleted since (pruned, discarded) has no
    id: the page then starts at the first row of its sort value (a row or
    two may show again), never past rows it has not shown."""
    if tie == "idem":
        return p
    missing = -1 if not scan_desc else 2**63 - 1
    return f"COALESCE((SELECT id FROM jobs WHERE idem = {p}), {missing})"


_Arm = tuple[list[str], list[Any]]


def _arms(
    exprs: list[str], op: str, start: Key | None, d: Dialect, scan_desc: bool, split: bool
) -> list[_Arm]:
    """The keyset as WHERE clauses and their parameters, one set per query arm.

    SQLite seeks an index by a row value's leading columns only, never by the
    rowid that ends every entry: `(state_since, id) > (?, ?)` would walk every
    row of the anchor's time before it, and a batch of jobs shares one time.
    `split` (an index-served order by id) makes two arms, each a seek: the
    anchor's ties past its id (`state_since = ? AND id > ?`, a rowid range
    within the equal prefix), and the rows past its sort values."""
    if start is None:
        return [([], [])]
    anchor = _anchor(exprs[-1], d.p, scan_desc)
    if not split:
        marks = [d.p] * (len(exprs) - 1) + [anchor]
        return [([f"({', '.join(exprs)}) {op} ({', '.join(marks)})"], list(start))]
    sort_exprs, values = exprs[:-1], list(start[:-1])
    ties = [f"{e} = {d.p}" for e in sort_exprs] + [f"{exprs[-1]} {op} {anchor}"]
    past = [f"({', '.join(sort_exprs)}) {op[0]} ({d.marks(len(sort_exprs))})"]
    return [(ties, [*values, start[-1]]), (past, values)]


def page_sql(
    view: View,
    now: float,
    dead: Sequence[str],
    sizes: Mapping[str, int],
    start: Key | None,
    direction: Direction,
    limit: int,
    hits: str | None = None,
    dialect: str = "sqlite",
    prices: PriceTable | None = None,
) -> tuple[str, list[Any]]:
    d = DIALECTS[dialect]
    sort = view.sort
    op, scan_desc = _keyset(sort.column, sort.descending, direction)
    way = "DESC" if scan_desc else "ASC"
    tie = tie_column(sort, dialect)
    exprs = [*(sort_sql(c) for c in sort.columns), tie]
    order = ", ".join(f"{e} {way}" for e in exprs)
    extra, extra_params = predicates(view, now, dead, hits, dialect, prices)
    if direction == "last":
        start = None
    statuses = view.effective_statuses()
    if statuses is not None and not statuses:
        return "SELECT " + PAGE_COLUMNS + " FROM jobs WHERE FALSE", []
    by_id = hits is not None and bool(view.filter.text)
    per_status = _PER_STATUS.get(sort.column)
    small = statuses is not None and sum(sizes.get(s.value, 0) for s in statuses) <= SMALL_STATUS
    by_status = not by_id and (per_status is not None or (sort.indexed and small))
    by_index = by_status or (not by_id and sort.column == "updated_at")
    arms = _arms(exprs, op, start, d, scan_desc, split=by_index and tie == "id")
    subs: list[str] = []
    params: list[Any] = []
    if by_status:
        index = per_status or "jobs_status_age"
        for status in statuses if statuses is not None else list(Status):
            for n, (keyset, keyset_params) in enumerate(arms):
                where = " AND ".join([f"status = {d.p}", *extra, *keyset])
                subs.append(
                    f"SELECT * FROM (SELECT {PAGE_COLUMNS} FROM jobs{d.indexed_by(index)}"
                    f" WHERE {where} ORDER BY {order} LIMIT {d.p}) AS by_{status.value}{n}"
                )
                params += [status.value, *extra_params, *keyset_params, limit]
        return " UNION ALL ".join(subs) + f" ORDER BY {order} LIMIT {d.p}", [*params, limit]
    clauses = list(extra)
    shared = list(extra_params)
    if statuses is not None:
        clauses.insert(0, f"status IN (SELECT value FROM {d.each()})")
        shared.insert(0, json.dumps([s.value for s in statuses]))
    # Text-index candidates are read by id (NOT INDEXED leaves only rowid
    # lookups) and sorted: few rows, wherever they sit in the order.
    source = d.not_indexed if by_id else d.indexed_by("jobs_updated")
    if not by_id and sort.column != "updated_at":
        source = ""  # idem's UNIQUE index, or none (UNINDEXED_SORT_CAP)
    for keyset, keyset_params in arms:
        where = " AND ".join([*clauses, *keyset]) or "TRUE"
        subs.append(f"SELECT {PAGE_COLUMNS} FROM jobs{source} WHERE {where} ORDER BY {order}")
        params += [*shared, *keyset_params, limit]
    if len(subs) == 1:
        return subs[0] + f" LIMIT {d.p}", params
    merged = " UNION ALL ".join(
        f"SELECT * FROM ({sub} LIMIT {d.p}) AS arm{n}" for n, sub in enumerate(subs)
    )
    return merged + f" ORDER BY {order} LIMIT {d.p}", [*params, limit]
