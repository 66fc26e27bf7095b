"""The SQLite ledger's group commit in few statements.

`Ledger.write_batch` on SQLite: the same rules as the shared statements
(core/ledger/compare_and_set.py, which PostgreSQL runs) — every write after
a claim is a compare-and-set on (key, expected status, lease owner), every
transition appends its event in the transaction that makes it — in a number
of statements that does not grow with the batch:

- the marked rows: one `UPDATE … RETURNING id, …`;
- the transitions: ONE `UPDATE … FROM (VALUES …) RETURNING` per group of
  transitions writing the same columns, which checks each row's lease and
  status and moves it in the same statement (no SELECT of the held rows
  before, no statement per row), and returns the rows it moved with their
  integer ids;
- their events and results: one `executemany` each, by that id (no lookup
  of the key again).

New rows (`insert_jobs`) get their "reserved" events from ONE `INSERT …
SELECT` over the ids the inserts took, not a statement per row that looks
each key up again.

Each statement is one hand-over to aiosqlite's thread, awaited: running the
whole batch inside that thread instead was measured slower (the thread then
fought the event loop's Python for the GIL at every step).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import aiosqlite

from reclaim_tui.core.ledger.compare_and_set import result_params, transition_columns
from reclaim_tui.core.ledger.schema import (
    COLUMNS,
    EVENT_BY_ID_SQL,
    EVENT_SQL,
    RESULT_BY_ID_SQL,
    chunks,
    row_from_tuple,
)
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_FLUSH_SQL, migration_statements
from reclaim_tui.core.models import Actor, Row, Transition

__all__ = ["insert_jobs", "move_search_queue", "write_batch"]

#: Transitions per move statement: (columns + 2) parameters a row stay far
#: below SQLite's 32,766 host parameters.
ROWS_PER_STATEMENT = 500

#: SQLite's largest rowid: past it, new rows take unused ids at random.
_LARGEST_ROWID = 2**63 - 1

_Group = list[tuple[Transition, dict[str, Any]]]


async def write_batch(
    db: aiosqlite.Connection,
    owner: str,
    actor: Actor,
    sending: Sequence[str],
    transitions: Sequence[Transition],
    now: float,
) -> tuple[dict[str, Row], list[str]]:
    """`Ledger.write_batch`'s statements, inside the caller's transaction:
    the marked rows and the keys whose transition applied."""
    events: list[tuple[Any, ...]] = []
    marked: dict[str, Row] = {}
    if sending:
        for r in await db.execute_fetchall(
            "UPDATE jobs SET attempts = attempts + 1, inflight = 1, sent_at = ?"
            " WHERE idem IN (SELECT value FROM json_each(?)) AND lease_owner = ?"
            f" AND status = 'reserving' AND inflight = 0 RETURNING id, {COLUMNS}",
            (now, json.dumps(list(sending)), owner),
        ):
            row = row_from_tuple(tuple(r)[1:])
            marked[row.idem] = row
            note = f"attempt {row.attempts}: sending create"
            events.append((now, r[0], row.idem, actor, "reserving", "reserving", note))
    applied: list[str] = []
    results: list[tuple[Any, ...]] = []
    for names, group in _statements(transitions, now):
        params = [
            v for t, cols in group for v in (*(cols[n] for n in names), t.idem, t.expect.value)
        ]
        moved = {
            r[0]: r[1]
            for r in await db.execute_fetchall(_move_sql(names, len(group)), [*params, owner])
        }
        for t, _ in group:
            job = moved.get(t.idem)
            if job is None:
                continue  # not ours any more, or not in the expected status
            applied.append(t.idem)
            # A poll that found the job still running changes no state and
            # says nothing: it is counted in `polls`, not written as an event.
            if t.note or t.expect != t.to:
                events.append((now, job, t.idem, actor, t.expect.value, t.to.value, t.note))
            if t.result is not None:
                results.append((job, *result_params(t.idem, t.result, now)))
    if events:
        await db.executemany(EVENT_BY_ID_SQL, events)
    if results:
        await db.executemany(RESULT_BY_ID_SQL, results)
    return marked, applied


async def insert_jobs(
    db: aiosqlite.Connection, jobs: Sequence[tuple[str, str, str]], actor: str, now: float
) -> list[str]:
    """`Ledger.insert_jobs`'s statements, inside the caller's transaction:
    the rows (idem, spec_json, model) whose key is new, each with its
    "reserved" event. The keys inserted, in order."""
    inserted: list[str] = []
    async with db.execute("SELECT COALESCE(MAX(id), 0) FROM jobs") as cur:
        row = await cur.fetchone()
    last = row[0] if row is not None else 0
    for chunk in chunks(jobs, 5000):
        # Inside the write lock, "not present now" means "inserted below".
        async with db.execute(
            "SELECT idem FROM jobs WHERE idem IN (SELECT value FROM json_each(?))",
            (json.dumps([j[0] for j in chunk]),),
        ) as cur:
            existing = {r[0] for r in await cur.fetchall()}
        fresh = {j[0]: j for j in chunk if j[0] not in existing}
        await db.executemany(
            "INSERT INTO jobs(idem, spec, model, status, created_at, state_since,"
            " updated_at, next_at) VALUES (?,?,?,'reserving',?,?,?,?)",
            [(i, spec, model, now, now, now, now) for i, spec, model in fresh.values()],
        )
        inserted.extend(fresh)
    # Under the write lock an inserted row's id is the largest rowid there
    # was plus one (https://www.sqlite.org/autoinc.html) until that would pass
    # the largest integer, after which ids come at random: below that, the
    # new rows are exactly the ids past `last`, in the order they went in.
    if last <= _LARGEST_ROWID - len(inserted):
        await db.execute(
            "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
            " SELECT ?, id, idem, ?, NULL, 'reserving', 'reserved' FROM jobs WHERE id > ?"
            " ORDER BY id",
            (now, actor, last),
        )
    else:
        await db.executemany(
            EVENT_SQL,
            [(now, idem, actor, None, "reserving", "reserved", idem) for idem in inserted],
        )
    return inserted


_SEARCH_MOVES = tuple(migration_statements(SEARCH_FLUSH_SQL))


async def move_search_queue(db: aiosqlite.Connection) -> None:
    """Every row queued for the text indexes into them, inside the caller's
    transaction (core/ledger/sqlite/schema.py says why rows are queued)."""
    for statement in _SEARCH_MOVES:
        await db.execute(statement)


def _statements(
    transitions: Sequence[Transition], now: float
) -> list[tuple[tuple[str, ...], _Group]]:
    """The transitions as move statements: grouped by the columns they write,
    at most ROWS_PER_STATEMENT each, one key at most once per statement (a
    key given twice is moved again by a later statement, from where the
    first left it)."""
    shapes: dict[tuple[str, ...], list[tuple[set[str], _Group]]] = {}
    for t in transitions:
        cols = transition_columns(t, now)
        rounds = shapes.setdefault(tuple(sorted(cols)), [])
        for keys, group in rounds:
            if t.idem not in keys and len(group) < ROWS_PER_STATEMENT:
                keys.add(t.idem)
                group.append((t, cols))
                break
        else:
            rounds.append(({t.idem}, [(t, cols)]))
    return [(names, group) for names, rounds in shapes.items() for _, group in rounds]


@functools.lru_cache(maxsize=256)
def _move_sql(names: tuple[str, ...], rows: int) -> str:
    """`rows` transitions in ONE statement: each row's compare-and-set (its
    key, its expected status, the owner's lease) and its move together,
    returning (key, id) of the rows it moved. Bound: each row's new values,
    key and expected status, then the owner."""
    width = len(names) + 2
    values = ", ".join(["(" + ", ".join(["?"] * width) + ")"] * rows)
    assign = ", ".join(f"{n} = v.column{i + 1}" for i, n in enumerate(names))
    return (
        f"UPDATE jobs SET {assign} FROM (VALUES {values}) AS v"
        f" WHERE jobs.idem = v.column{width - 1} AND jobs.status = v.column{width}"
        " AND jobs.lease_owner = ? RETURNING jobs.idem, jobs.id"
    )
