"""The SQLite ledger's group commit, made ready on the event loop and run
in the connection's thread in one call (core/ledger/sqlite/hot_writes.py).

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
- their events and results: one multi-row `INSERT` each (per
  ROWS_PER_STATEMENT rows), by that id (no lookup of the key again);
- then, when the caller takes its next batch in the same transaction, the
  claim's one `UPDATE … RETURNING`.

Everything Python has to work out per row — each statement's parameters,
each event's text, each result's values — is made by `prepare` on the event
loop before the call. The thread's `run` only steps the statements and
pairs the rows they moved with what was prepared for them: Python the
thread runs holds the interpreter's lock, which the event loop's own work
then waits for.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.core.ledger.compare_and_set import result_params
from reclaim_tui.core.ledger.schema import COLUMNS, EVENT_BY_ID_SQL, RESULT_BY_ID_SQL
from reclaim_tui.core.models import Transition

__all__ = ["ROWS_PER_STATEMENT", "Batch", "prepare", "run"]

#: Transitions per move statement: (columns + 2) parameters a row stay far
#: below SQLite's 32,766 host parameters.
ROWS_PER_STATEMENT = 500

# The keys drive the statement (the key's unique index, a lookup a key):
# the unary `+` keeps the status and lease indexes out of the planner's
# choice, which without statistics searches every `reserving` row by its
# status and checks each against the keys, a cost that grows with the
# rows still to send rather than with the batch.
_MARK_SQL = (
    "UPDATE jobs SET attempts = attempts + 1, inflight = 1, sent_at = ?"
    " WHERE idem IN (SELECT value FROM json_each(?)) AND +lease_owner = ?"
    f" AND +status = 'reserving' AND inflight = 0 RETURNING id, {COLUMNS}"
)
#: where a marked row's attempts are in what `_MARK_SQL` returns
_ATTEMPTS = 1 + [c.strip() for c in COLUMNS.split(",")].index("attempts")

#: One transition of a move statement: its key, its event's (from, to,
#: note) or None (a poll that changed nothing), its result's values or None.
_Moving = tuple[str, tuple[str, str, str] | None, tuple[Any, ...] | None]
#: a move statement's transitions, each with its columns' values
_Group = list[tuple[Transition, tuple[Any, ...]]]


@dataclass(slots=True)
class Batch:
    """A group commit's statements and parameters, ready for the thread."""

    now: float
    actor: str
    #: the marking statement's parameters (None: no row is sent)
    mark: tuple[Any, ...] | None = None
    #: each move statement, its parameters, and its transitions in order
    moves: list[tuple[str, list[Any], list[_Moving]]] = field(default_factory=list)
    #: the claim that takes the next batch in the same transaction, if any
    claim: tuple[str, list[Any]] | None = None


def prepare(
    owner: str,
    actor: str,
    sending: Sequence[str],
    transitions: Sequence[Transition],
    now: float,
) -> Batch:
    """`write_batch`'s statements and what each row's event and result will
    be, worked out here, on the event loop."""
    batch = Batch(now, actor)
    if sending:
        batch.mark = (now, json.dumps(list(sending)), owner)
    for names, group in _statements(transitions, now):
        params: list[Any] = []
        moving: list[_Moving] = []
        for t, values in group:
            params += values
            # `_value_`: the member's text without the enum's property lookup
            expect, to = t.expect._value_, t.to._value_
            params.append(t.idem)
            params.append(expect)
            # A poll that found the job still running changes no state and
            # says nothing: it is counted in `polls`, not written as an event.
            event = (expect, to, t.note) if t.note or expect != to else None
            result = None if t.result is None else result_params(t.idem, t.result, now)
            moving.append((t.idem, event, result))
        params.append(owner)
        batch.moves.append((_move_sql(names, len(group)), params, moving))
    return batch


def run(
    conn: sqlite3.Connection, batch: Batch
) -> tuple[list[tuple[Any, ...]], list[str], list[tuple[Any, ...]]]:
    """In the connection's thread, inside the caller's transaction: the
    prepared statements. (the marked rows as returned: id first; the keys
    whose transition applied; the claimed rows as returned)."""
    now, actor = batch.now, batch.actor
    events: list[tuple[Any, ...]] = []
    marked: list[tuple[Any, ...]] = []
    if batch.mark is not None:
        marked = conn.execute(_MARK_SQL, batch.mark).fetchall()
        events = [
            (
                now,
                r[0],
                r[1],
                actor,
                "reserving",
                "reserving",
                f"attempt {r[_ATTEMPTS]}: sending create",
            )
            for r in marked
        ]
    applied: list[str] = []
    results: list[tuple[Any, ...]] = []
    for sql, params, moving in batch.moves:
        moved = dict(conn.execute(sql, params).fetchall())
        for idem, event, result in moving:
            job = moved.get(idem)
            if job is None:
                continue  # not ours any more, or not in the expected status
            applied.append(idem)
            if event is not None:
                events.append((now, job, idem, actor, *event))
            if result is not None:
                results.append((job, *result))
    _insert(conn, EVENT_BY_ID_SQL, events)
    _insert(conn, RESULT_BY_ID_SQL, results)
    claimed: list[tuple[Any, ...]] = []
    if batch.claim is not None:
        claimed = conn.execute(*batch.claim).fetchall()
    return marked, applied, claimed


def _insert(conn: sqlite3.Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """`sql` (one row's INSERT) for every row of `rows`, ROWS_PER_STATEMENT
    rows a statement: one statement's start and end, not one per row (the
    events' AUTOINCREMENT counter, for one, is read and written once a
    statement), in the rows' order."""
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[start : start + ROWS_PER_STATEMENT]
        conn.execute(_rows_sql(sql, len(chunk)), [v for row in chunk for v in row])


@functools.lru_cache(maxsize=256)
def _rows_sql(sql: str, rows: int) -> str:
    """The one-row INSERT `sql` (`… VALUES (?, …) …`) for `rows` rows."""
    head, rest = sql.split(" VALUES (", 1)
    marks, tail = rest.split(")", 1)
    return f"{head} VALUES {', '.join([f'({marks})'] * rows)}{tail}"


def _statements(
    transitions: Sequence[Transition], now: float
) -> list[tuple[tuple[str, ...], _Group]]:
    """The transitions as move statements: grouped by the columns they write,
    at most ROWS_PER_STATEMENT each, one key at most once per statement (a
    key given twice is moved again by a later statement, from where the
    first left it)."""
    shapes: dict[tuple[str, ...], list[tuple[set[str], _Group]]] = {}
    for t in transitions:
        names, pick = _shape(tuple(t.changes), t.to != t.expect, t.release)
        # the changes' values in their order, then what `_shape` adds
        values = pick((*t.changes.values(), t.to._value_, now, None, 0.0))
        rounds = shapes.get(names)
        if rounds is None:
            shapes[names] = [({t.idem}, [(t, values)])]
            continue
        for keys, group in rounds:
            if t.idem not in keys and len(group) < ROWS_PER_STATEMENT:
                keys.add(t.idem)
                group.append((t, values))
                break
        else:
            rounds.append(({t.idem}, [(t, values)]))
    return [(names, group) for names, rounds in shapes.items() for _, group in rounds]


@functools.lru_cache(maxsize=1024)
def _shape(
    changed: tuple[str, ...], moves: bool, release: bool
) -> tuple[tuple[str, ...], Callable[[tuple[Any, ...]], tuple[Any, ...]]]:
    """What a transition changing `changed` (in that order) writes: the
    columns `transition_columns` gives it (core/ledger/compare_and_set.py),
    sorted, and a function picking their values, in that order, out of (the
    changes' values, the new status, now, None, 0.0). Made once a shape, not
    a dict of columns a transition: the bookkeeping wins over a change of
    the same name, as there."""
    n = len(changed)
    at = {name: i for i, name in enumerate(changed)}
    at["status"] = n
    if moves:
        at["state_since"] = n + 1
    if release:
        at["lease_owner"] = n + 2
        at["lease_until"] = n + 3
    at["updated_at"] = n + 1
    names = tuple(sorted(at))
    return names, operator.itemgetter(*[at[name] for name in names])


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
