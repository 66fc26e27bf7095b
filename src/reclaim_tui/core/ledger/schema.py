"""The SQL both engines share: the column order a row is read in, the one
SQL spelling of "lease free", "orphan" and "append an event", and the one
place a SELECT tuple becomes a Row.

Where the engines' SQL differs a statement is an `Sql` holding both texts
(core/ledger/dialect.py).
Each engine's schema and numbered migrations are its own:
core/ledger/sqlite/schema.py and core/ledger/postgres/schema.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from reclaim_tui.core.frozen_make import maker
from reclaim_tui.core.ledger.dialect import SQLITE, Sql, text_for
from reclaim_tui.core.models import Row, Status

__all__ = [
    "COLUMNS",
    "EVENT_BY_ID_SQL",
    "EVENT_SQL",
    "ORPHAN_SQL",
    "RESULT_BY_ID_SQL",
    "chunks",
    "claim_sql",
    "input_text_sql",
    "lease_free_sql",
    "orphan_sql",
    "row_from_tuple",
]

COLUMNS = (
    "idem, spec, model, status, handle, attempts, polls, inflight, held, duplicates, "
    "error_streak, prev_owner, lease_owner, lease_until, next_at, last_error, created_at, "
    "state_since, submitted_at, done_at, consumed_at, updated_at, sent_at, outside_streak"
)


def input_text_sql(spec: str) -> str:
    """SQLite's searchable input of the spec in column `spec` (its schema's
    text-index triggers; `Dialect.input_text`)."""
    return SQLITE.input_text(spec)


# Events and results hang off the job's integer id, not its (random) key:
# rows of one batch were inserted together, so their ids — and the index
# pages a batch writes — are contiguous instead of scattered over the tree.
# Parameters: at, idem, actor, from, to, note (the key twice: positional
# parameters are the one marker both engines share).
EVENT_SQL = Sql(
    lambda d: (
        "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
        f" SELECT {d.p}, id, {d.p}, {d.p}, {d.p}, {d.p}, {d.p} FROM jobs WHERE idem = {d.p}"
    )
)
#: The same where the job's id is already known (the statement that moved
#: the row returned it): no lookup of the key.
EVENT_BY_ID_SQL = Sql(
    lambda d: (
        "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
        f" VALUES ({d.marks(7)})"
    )
)
#: A job's result by its id (job, idem, interaction_id, output_text, usage,
#: raw_json, stored_at); a second result of the row replaces the first.
RESULT_BY_ID_SQL = Sql(
    lambda d: (
        "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json,"
        f" stored_at) VALUES ({d.marks(7)}) ON CONFLICT(job) DO UPDATE SET"
        " interaction_id = excluded.interaction_id, output_text = excluded.output_text,"
        " usage = excluded.usage, raw_json = excluded.raw_json, stored_at = excluded.stored_at"
    )
)


def claim_sql(where: str, free: str, lock: str) -> Sql:
    """A claim: up to `LIMIT ?` rows matching `where` whose lease is `free`,
    the first due first, taken in ONE `UPDATE … RETURNING` (parameters: the
    owner, the lease's end, then `where`'s and `free`'s, then the limit).
    `lock` ends the row selection (PostgreSQL: FOR UPDATE SKIP LOCKED)."""
    return Sql(
        lambda d: (
            f"UPDATE jobs SET prev_owner = lease_owner, lease_owner = {d.p},"
            f" lease_until = {d.p} WHERE idem IN (SELECT idem FROM jobs WHERE {text_for(where, d)}"
            f" AND {text_for(free, d)} ORDER BY next_at LIMIT {d.p}{lock}) RETURNING {COLUMNS}"
        )
    )


# The one spelling in SQL of "nobody can act on this row" and of "orphan"
# (Row.lease_free / Row.is_orphan are the same rules in Python; a test checks
# that they agree).
_FREE = Sql(
    lambda d: (
        f"(lease_owner IS NULL OR lease_until <= {d.p}"
        f" OR lease_owner IN (SELECT value FROM {d.each()}))"
    )
)
ORPHAN_SQL = Sql(
    lambda d: f"(status = 'reserving' AND (held = 1 OR (inflight = 1 AND {_FREE.of(d)})))"
)


def lease_free_sql(now: float, dead: Sequence[str]) -> tuple[Sql, list[Any]]:
    """The lease-free rule as a WHERE fragment and its parameters."""
    return _FREE, [now, json.dumps(list(dead))]


def orphan_sql(now: float, dead: Sequence[str]) -> tuple[Sql, list[Any]]:
    """The orphan rule as a WHERE fragment and its parameters."""
    return ORPHAN_SQL, [now, json.dumps(list(dead))]


#: A status as stored → its member: a dict lookup, where `Status(text)`
#: runs the enum's lookup machinery for every row read.
_STATUS = {s.value: s for s in Status}
#: `Row(*values)` without a call per field (core/frozen_make.py): a claim
#: reads a Row for every row it takes.
_make_row = maker(Row)


def row_from_tuple(values: Sequence[Any]) -> Row:
    """The one place a SELECT tuple becomes a Row (column order = COLUMNS)."""
    v = list(values)
    status = _STATUS.get(v[3])
    v[3] = Status(v[3]) if status is None else status  # an unknown text raises
    v[7] = bool(v[7])
    v[8] = bool(v[8])
    return _make_row(*v)


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
