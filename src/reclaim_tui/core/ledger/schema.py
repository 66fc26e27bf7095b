"""The SQL both engines share: the column order a row is read in, the one
SQL spelling of "lease free", "orphan" and "append an event", and the one
place a SELECT tuple becomes a Row.

Written in SQLite's SQL; core/ledger/pg_sql.py rewrites it for PostgreSQL.
Each engine's schema and numbered migrations are its own:
core/ledger/sqlite_schema.py and core/ledger/pg_schema.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

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
    """The searchable input of the spec JSON in column `spec`: the text of a
    string input, the JSON text of a structured one; NULL for a spec that is
    not JSON (a hand-edited row must not make every write to it fail)."""
    return f"CASE WHEN json_valid({spec}) THEN json_extract({spec}, '$.input') END"


# Events and results hang off the job's integer id, not its (random) key:
# rows of one batch were inserted together, so their ids — and the index
# pages a batch writes — are contiguous instead of scattered over the tree.
EVENT_SQL = (
    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " SELECT ?1, id, ?2, ?3, ?4, ?5, ?6 FROM jobs WHERE idem = ?2"
)
#: The same where the job's id is already known (the statement that moved
#: the row returned it): no lookup of the key.
EVENT_BY_ID_SQL = (
    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
#: A job's result by its id (job, idem, interaction_id, output_text, usage,
#: raw_json, stored_at); a second result of the row replaces the first.
RESULT_BY_ID_SQL = (
    "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json, stored_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(job) DO UPDATE SET"
    " interaction_id = excluded.interaction_id, output_text = excluded.output_text,"
    " usage = excluded.usage, raw_json = excluded.raw_json, stored_at = excluded.stored_at"
)


def claim_sql(where: str, free: str, lock: str) -> str:
    """A claim: up to `LIMIT ?` rows matching `where` whose lease is `free`,
    the first due first, taken in ONE `UPDATE … RETURNING` (parameters: the
    owner, the lease's end, then `where`'s and `free`'s, then the limit).
    `lock` ends the row selection (PostgreSQL: FOR UPDATE SKIP LOCKED)."""
    return (
        "UPDATE jobs SET prev_owner = lease_owner, lease_owner = ?, lease_until = ?"
        f" WHERE idem IN (SELECT idem FROM jobs WHERE {where} AND {free}"
        f" ORDER BY next_at LIMIT ?{lock}) RETURNING {COLUMNS}"
    )


# The one spelling in SQL of "nobody can act on this row" and of "orphan"
# (Row.lease_free / Row.is_orphan are the same rules in Python; a test checks
# that they agree). `?1`-style numbering is avoided: callers splice these in.
_FREE = (
    "(lease_owner IS NULL OR lease_until <= ? OR lease_owner IN (SELECT value FROM json_each(?)))"
)
ORPHAN_SQL = f"(status = 'reserving' AND (held = 1 OR (inflight = 1 AND {_FREE})))"


def lease_free_sql(now: float, dead: Sequence[str]) -> tuple[str, list[Any]]:
    """The lease-free rule as a WHERE fragment and its parameters."""
    return _FREE, [now, json.dumps(list(dead))]


def orphan_sql(now: float, dead: Sequence[str]) -> tuple[str, list[Any]]:
    """The orphan rule as a WHERE fragment and its parameters."""
    return ORPHAN_SQL, [now, json.dumps(list(dead))]


def row_from_tuple(values: Sequence[Any]) -> Row:
    """The one place a SELECT tuple becomes a Row (column order = COLUMNS)."""
    v = list(values)
    v[3] = Status(v[3])
    v[7] = bool(v[7])
    v[8] = bool(v[8])
    return Row(*v)


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
