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
from reclaim_tui.core.ledger.console.views import Direction, Key, View, sort_sql
from reclaim_tui.core.ledger.dialect import DIALECTS
from reclaim_tui.core.ledger.schema import COLUMNS, orphan_sql
from reclaim_tui.core.models import Status

if TYPE_CHECKING:
    from reclaim_tui.core.costs import PriceTable

__all__ = ["SMALL_STATUS", "page_sql", "predicates"]

#: Below this many rows, a status range sorted in memory by SQLite beats a
#: walk of the updated_at index that skips every row of other statuses.
SMALL_STATUS = 20_000

#: Sorts an index serves per status (jobs_status_age, jobs_due: one range a
#: status, merged); the others are served over the whole table (jobs_updated,
#: idem's UNIQUE index).
_PER_STATUS = {"state_since": "jobs_status_age", "status": "jobs_status_age", "next_at": "jobs_due"}


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


def _keyset(column: str, descending: bool, direction: Direction) -> tuple[str, bool]:
    """(comparison operator, scan descending?) for a page in `direction`."""
    backwards = direction in ("before", "last")
    scan_desc = descending != backwards
    if direction == "from":
        op = "<=" if descending else ">="
    else:
        op = "<" if scan_desc else ">"
    return op, scan_desc


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
    exprs = [*(sort_sql(c) for c in sort.columns), "idem"]
    order = ", ".join(f"{e} {way}" for e in exprs)
    extra, extra_params = predicates(view, now, dead, hits, dialect, prices)
    keyset: list[str] = []
    keyset_params: list[Any] = []
    if start is not None and direction != "last":
        keyset = [f"({', '.join(exprs)}) {op} ({d.marks(len(exprs))})"]
        keyset_params = list(start)
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
            where = " AND ".join([f"status = {d.p}", *extra, *keyset])
            subs.append(
                f"SELECT * FROM (SELECT {COLUMNS} FROM jobs{d.indexed_by(index)}"
                f" WHERE {where} ORDER BY {order} LIMIT {d.p}) AS by_{status.value}"
            )
            params += [status.value, *extra_params, *keyset_params, limit]
        return " UNION ALL ".join(subs) + f" ORDER BY {order} LIMIT {d.p}", [*params, limit]
    clauses = list(extra)
    params = list(extra_params)
    if statuses is not None:
        clauses.insert(0, f"status IN (SELECT value FROM {d.each()})")
        params.insert(0, json.dumps([s.value for s in statuses]))
    where = " AND ".join([*clauses, *keyset]) or "TRUE"
    # Text-index candidates are read by id (NOT INDEXED leaves only rowid
    # lookups) and sorted: few rows, wherever they sit in the order.
    source = d.not_indexed if by_id else d.indexed_by("jobs_updated")
    if not by_id and sort.column != "updated_at":
        source = ""  # idem's UNIQUE index, or none (UNINDEXED_SORT_CAP)
    sql = f"SELECT {COLUMNS} FROM jobs{source} WHERE {where} ORDER BY {order}"
    return sql + f" LIMIT {d.p}", [*params, *keyset_params, limit]
