"""The SQLite ledger's hot writes, each a whole `BEGIN IMMEDIATE … COMMIT`
run inside aiosqlite's thread in ONE hand-over (issue 27, item 4).

Through aiosqlite every statement, fetch and cursor close is a hop to its
thread and back (a queue put, a self-pipe write, a loop wake-up): a group
commit of a claimed batch took a dozen of them. Here a claim, a group
commit (`write_batch`), a renewal, a release and an insert are one plain
function over the `sqlite3.Connection`, queued once; the caller awaits its
result. The rules are the shared ones (core/ledger/compare_and_set.py, whose
statements PostgreSQL runs): every write after a claim is a compare-and-set
on (key, expected status, lease owner) — here ONE `UPDATE … RETURNING id`
per transition, which checks and moves together — and every transition
appends its event in the same transaction, by the job's integer id (no
lookup of the key again). A function that raises rolls its transaction
back before it returns; one whose caller was cancelled still runs to its
COMMIT or ROLLBACK in the thread, so the connection is never left inside a
transaction.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from reclaim_tui.core.ledger.compare_and_set import result_params, transition_columns
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.schema import (
    COLUMNS,
    EVENT_BY_ID_SQL,
    RESULT_BY_ID_SQL,
    chunks,
    claim_sql,
    lease_free_sql,
    row_from_tuple,
)
from reclaim_tui.core.models import Actor, Row, Transition

__all__ = ["claim", "insert_jobs", "release", "renew", "transaction", "write_batch"]

T = TypeVar("T")


def transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], T]) -> T:
    """`body` inside `BEGIN IMMEDIATE … COMMIT` (rolled back if it raises)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        out = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass  # no transaction was open: COMMIT itself failed and ended it
        raise
    return out


def claim(
    conn: sqlite3.Connection,
    owner: str,
    where: str,
    params: Sequence[Any],
    *,
    limit: int,
    until: float,
    now: float,
) -> list[Row]:
    """`LedgerBase._claim` in one transaction: the dead holders are read
    under the write lock, then ONE `UPDATE … RETURNING` takes the rows."""
    live = conn.execute(
        "SELECT DISTINCT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
        " AND lease_until > ? AND lease_owner != ?",
        (now, owner),
    ).fetchall()
    dead = [r[0] for r in live if holder_alive(r[0]) is False]
    free, free_params = lease_free_sql(now, dead)
    sql = claim_sql(where, free, "")
    rows = conn.execute(sql, [owner, until, *params, *free_params, limit]).fetchall()
    return [row_from_tuple(r) for r in rows]


def write_batch(
    conn: sqlite3.Connection,
    owner: str,
    actor: Actor,
    sending: Sequence[str],
    transitions: Sequence[Transition],
    now: float,
) -> tuple[dict[str, Row], list[str]]:
    """`Ledger.write_batch`'s statements (see its text): the marked rows and
    the keys whose transition applied."""
    events: list[tuple[Any, ...]] = []
    marked: dict[str, Row] = {}
    if sending:
        for r in conn.execute(
            "UPDATE jobs SET attempts = attempts + 1, inflight = 1, sent_at = ?"
            " WHERE idem IN (SELECT value FROM json_each(?)) AND lease_owner = ?"
            f" AND status = 'reserving' AND inflight = 0 RETURNING id, {COLUMNS}",
            (now, json.dumps(list(sending)), owner),
        ).fetchall():
            row = row_from_tuple(r[1:])
            marked[row.idem] = row
            note = f"attempt {row.attempts}: sending create"
            events.append((now, r[0], row.idem, actor, "reserving", "reserving", note))
    applied: list[str] = []
    results: list[tuple[Any, ...]] = []
    for names, group in _statements(transitions, now):
        moved = dict(
            conn.execute(
                _move_sql(names, len(group)),
                [*(v for t, cols in group for v in _values(t, cols, names)), owner],
            ).fetchall()
        )
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
        conn.executemany(EVENT_BY_ID_SQL, events)
    if results:
        conn.executemany(RESULT_BY_ID_SQL, results)
    return marked, applied


#: Rows per move statement: (columns + 2) parameters each stay far below
#: SQLite's 32,766, and a few sizes keep the compiled statements cached.
_SIZES = (256, 64, 16, 4, 1)

_Group = list[tuple[Transition, dict[str, Any]]]


def _statements(
    transitions: Sequence[Transition], now: float
) -> list[tuple[tuple[str, ...], _Group]]:
    """The transitions as move statements: grouped by the columns they write,
    cut into the sizes of `_SIZES`, one key at most once per statement (a key
    given twice is moved again by a later statement, from where the first
    left it)."""
    shapes: dict[tuple[str, ...], list[tuple[set[str], _Group]]] = {}
    for t in transitions:
        cols = transition_columns(t, now)
        rounds = shapes.setdefault(tuple(sorted(cols)), [])
        for keys, group in rounds:
            if t.idem not in keys:
                keys.add(t.idem)
                group.append((t, cols))
                break
        else:
            rounds.append(({t.idem}, [(t, cols)]))
    out: list[tuple[tuple[str, ...], _Group]] = []
    for names, rounds in shapes.items():
        for _, group in rounds:
            start = 0
            while start < len(group):
                size = next(n for n in _SIZES if n <= len(group) - start)
                out.append((names, group[start : start + size]))
                start += size
    return out


def _values(t: Transition, cols: dict[str, Any], names: tuple[str, ...]) -> list[Any]:
    return [*(cols[n] for n in names), t.idem, t.expect.value]


@functools.lru_cache(maxsize=128)
def _move_sql(names: tuple[str, ...], rows: int) -> str:
    """`rows` transitions in ONE statement: each row's compare-and-set (its
    key, its expected status, the owner's lease) and its move together,
    returning (key, id) of the rows it moved. Values come bound: (the
    columns' values…, key, expected status) per row, then the owner."""
    width = len(names) + 2
    row = "(" + ", ".join("?" for _ in range(width)) + ")"
    assign = ", ".join(f"{n} = v.column{i + 1}" for i, n in enumerate(names))
    return (
        f"UPDATE jobs SET {assign} FROM (VALUES {', '.join([row] * rows)}) AS v"
        f" WHERE jobs.idem = v.column{width - 1} AND jobs.status = v.column{width}"
        " AND jobs.lease_owner = ? RETURNING jobs.idem, jobs.id"
    )


def renew(conn: sqlite3.Connection, owner: str, keys: Sequence[str], until: float) -> set[str]:
    held: set[str] = set()
    for chunk in chunks(keys, 5000):
        held.update(
            r[0]
            for r in conn.execute(
                "UPDATE jobs SET lease_until = ? WHERE lease_owner = ?"
                " AND idem IN (SELECT value FROM json_each(?)) RETURNING idem",
                (until, owner, json.dumps(list(chunk))),
            ).fetchall()
        )
    return held


def release(conn: sqlite3.Connection, owner: str, keys: Sequence[str]) -> int:
    cur = conn.execute(
        "UPDATE jobs SET lease_owner = NULL, lease_until = 0 WHERE lease_owner = ?"
        " AND idem IN (SELECT value FROM json_each(?))",
        (owner, json.dumps(list(keys))),
    )
    return int(cur.rowcount)


def insert_jobs(
    conn: sqlite3.Connection, jobs: Sequence[tuple[str, str, str]], actor: str, now: float
) -> list[str]:
    """Reserve the rows whose key is not present yet, each with its event;
    returns the keys inserted (an existing key is never overwritten)."""
    inserted: list[str] = []
    for chunk in chunks(jobs, 5000):
        keys = json.dumps([j[0] for j in chunk])
        # Inside the write lock, "not present now" means "inserted below".
        existing = {
            r[0]
            for r in conn.execute(
                "SELECT idem FROM jobs WHERE idem IN (SELECT value FROM json_each(?))", (keys,)
            ).fetchall()
        }
        fresh = {j[0]: j for j in chunk if j[0] not in existing}
        if not fresh:
            continue
        conn.executemany(
            "INSERT INTO jobs(idem, spec, model, status, created_at, state_since,"
            " updated_at, next_at) VALUES (?,?,?,'reserving',?,?,?,?)",
            [(i, spec, model, now, now, now, now) for i, spec, model in fresh.values()],
        )
        # One statement for the chunk's events, in the rows' id order.
        conn.execute(
            "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
            " SELECT ?, id, idem, ?, NULL, 'reserving', 'reserved' FROM jobs"
            " WHERE idem IN (SELECT value FROM json_each(?)) ORDER BY id",
            (now, actor, json.dumps(list(fresh))),
        )
        inserted.extend(fresh)
    return inserted
