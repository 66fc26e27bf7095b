"""The ledger's public reads, the same SQL on both engines.

Each takes `fetch`, an engine's locked read (`_fetchall`, which sends the
engine's text of each statement: core/ledger/dialect.py), so the
statements live once; `core/ledger/base.py` exposes them as the
`Ledger` port's methods.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.schema import COLUMNS, chunks, orphan_sql, row_from_tuple
from reclaim_tui.core.models import Event, Row, StoredResult

__all__ = [
    "EVENTS_SQL",
    "GET_SQL",
    "RESULT_SQL",
    "Fetch",
    "counts",
    "events",
    "find",
    "get",
    "get_many",
    "iter_rows",
    "orphan_count",
    "result",
    "results",
    "stored_result",
    "stored_usage",
]

#: An engine's locked read: (SQL, parameters) → tuples in the SELECT's order.
Fetch = Callable[[str, Sequence[Any]], Awaitable[list[Any]]]

_RESULT_COLUMNS = "idem, interaction_id, output_text, usage, raw_json, stored_at"


#: one row by its key
GET_SQL = Sql(lambda d: f"SELECT {COLUMNS} FROM jobs WHERE idem = {d.p}")
#: a row's stored result, by the row's key
RESULT_SQL = Sql(
    lambda d: (
        f"SELECT {_RESULT_COLUMNS} FROM results"
        f" WHERE job = (SELECT id FROM jobs WHERE idem = {d.p})"
    )
)
#: a row's events in order, by the row's key and a limit
EVENTS_SQL = Sql(
    lambda d: (
        "SELECT id, at, idem, actor, from_status, to_status, note FROM events"
        f" WHERE job = (SELECT id FROM jobs WHERE idem = {d.p}) ORDER BY id LIMIT {d.p}"
    )
)


async def get(fetch: Fetch, idem: str) -> Row | None:
    rows = await fetch(GET_SQL, (idem,))
    return row_from_tuple(rows[0]) if rows else None


async def get_many(fetch: Fetch, idems: Sequence[str]) -> dict[str, Row]:
    out: dict[str, Row] = {}
    for chunk in chunks(idems, 5000):
        for values in await fetch(
            Sql(
                lambda d: f"SELECT {COLUMNS} FROM jobs WHERE idem IN (SELECT value FROM {d.each()})"
            ),
            (json.dumps(list(chunk)),),
        ):
            out[values[0]] = row_from_tuple(values)
    return out


async def find(fetch: Fetch, prefix: str, limit: int = 5) -> list[Row]:
    """Rows whose key starts with `prefix` (operators type short keys): the
    first `limit` of them, in key order."""
    rows = await fetch(
        Sql(
            lambda d: (
                f"SELECT {COLUMNS} FROM jobs WHERE idem >= {d.p} AND idem < {d.p}"
                f" ORDER BY idem LIMIT {d.p}"
            )
        ),
        (prefix, prefix + "\uffff", limit),
    )
    return [row_from_tuple(r) for r in rows]


async def iter_rows(fetch: Fetch, batch: int = 2000) -> AsyncIterator[Row]:
    """Every row, in key order, a page at a time (exports)."""
    last = ""
    while True:
        page = await fetch(
            Sql(
                lambda d: f"SELECT {COLUMNS} FROM jobs WHERE idem > {d.p} ORDER BY idem LIMIT {d.p}"
            ),
            (last, batch),
        )
        if not page:
            return
        for values in page:
            yield row_from_tuple(values)
        last = page[-1][0]


async def result(fetch: Fetch, idem: str) -> StoredResult | None:
    return stored_result(await fetch(RESULT_SQL, (idem,)))


def stored_result(rows: Sequence[Any]) -> StoredResult | None:
    """What `RESULT_SQL` read, as a stored result (None: no row)."""
    if not rows:
        return None
    r = rows[0]
    return StoredResult(r[0], r[1], r[2], stored_usage(r[3]), r[4], r[5])


async def results(fetch: Fetch, idems: Sequence[str]) -> dict[str, StoredResult]:
    out: dict[str, StoredResult] = {}
    for chunk in chunks(idems, 5000):
        for r in await fetch(
            Sql(
                lambda d: (
                    f"SELECT {_RESULT_COLUMNS}"
                    " FROM results WHERE job IN"
                    f" (SELECT id FROM jobs WHERE idem IN (SELECT value FROM {d.each()}))"
                )
            ),
            (json.dumps(list(chunk)),),
        ):
            out[r[0]] = StoredResult(r[0], r[1], r[2], stored_usage(r[3]), r[4], r[5])
    return out


async def events(fetch: Fetch, idem: str, limit: int = 10_000) -> list[Event]:
    return [Event(*r) for r in await fetch(EVENTS_SQL, (idem, limit))]


async def counts(fetch: Fetch) -> dict[str, tuple[int, float | None]]:
    """Per status: (count, oldest state_since)."""
    rows = await fetch("SELECT status, COUNT(*), MIN(state_since) FROM jobs GROUP BY status", ())
    return {r[0]: (int(r[1]), r[2]) for r in rows}


async def orphan_count(fetch: Fetch, now: float, dead: Sequence[str]) -> int:
    """Orphans (ORPHAN_SQL): what `status` and the console's orphans tab
    count, given the holders known dead."""
    where, params = orphan_sql(now, dead)
    rows = await fetch("SELECT COUNT(*) FROM jobs WHERE " + where, params)
    return int(rows[0][0])


def stored_usage(text: str | None) -> dict[str, Any] | None:
    """A stored usage column as a mapping. The engine writes JSON objects; a
    value edited by hand into something else is kept as text under
    `unreadable` (no token counts: its cost is unknown) rather than making
    every read of that row — export, prune's archive — fail."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return {"unreadable": text[:1000]}
    return value if isinstance(value, dict) else {"unreadable": text[:1000]}
