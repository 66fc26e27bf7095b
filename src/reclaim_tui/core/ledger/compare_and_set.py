"""The ledger's compare-and-set writes, as statements over an open transaction.

Every write after a claim is a compare-and-set on (idem, expected status,
lease owner) checked inside the same write transaction, so a process that
lost its lease changes nothing; every transition appends to `events` in the
transaction that makes it. Each function here runs inside a transaction the
caller opened (`Ledger.write()`): none begins or commits one.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import aiosqlite

from reclaim_tui.core.ledger.dialect import Dialect, Sql
from reclaim_tui.core.ledger.schema import (
    COLUMNS,
    EVENT_SQL,
    chunks,
    lease_free_sql,
    row_from_tuple,
)
from reclaim_tui.core.models import Actor, RemoteInteraction, Row, Status, Transition
from reclaim_tui.core.result_json import acyclic_encoder

__all__ = [
    "apply_transitions",
    "mark_sending",
    "operator_cas",
    "result_params",
    "transition_columns",
]


async def mark_sending(
    db: aiosqlite.Connection, owner: str, actor: Actor, idems: Sequence[str], now: float
) -> dict[str, Row]:
    """Commit the next attempt of the `reserving` rows `owner` holds and has
    not sent yet (attempts + 1, in flight, sent_at). Returns the marked rows."""
    if not idems:
        return {}
    async with db.execute(
        _MARK_SENDING_SQL,
        (now, json.dumps(list(idems)), owner),
    ) as cur:
        rows = {r.idem: r for r in map(row_from_tuple, await cur.fetchall())}
    await db.executemany(
        EVENT_SQL,
        [
            (
                now,
                r.idem,
                actor,
                "reserving",
                "reserving",
                f"attempt {r.attempts}: sending create",
                r.idem,
            )
            for r in rows.values()
        ],
    )
    return rows


async def apply_transitions(
    db: aiosqlite.Connection,
    owner: str,
    actor: Actor,
    transitions: Sequence[Transition],
    now: float,
) -> list[str]:
    """Apply each transition where `owner` still holds the row in the expected
    status. Returns the idems applied."""
    if not transitions:
        return []
    # Sorted: on PostgreSQL the rows are locked in this order, the one order
    # every writer of several rows takes (no lock cycle between two of them).
    held = await _held(db, owner, sorted({t.idem for t in transitions}))
    todo: list[Transition] = []
    for t in transitions:
        if held.get(t.idem) == t.expect.value:
            todo.append(t)
            # A key given twice moves on from where this one leaves it.
            held[t.idem] = "" if t.release else t.to.value
    await _write_transitions(db, todo, now, owner)
    # A poll that found the job still running changes no state and
    # says nothing: it is counted in `polls`, not written as an event.
    await db.executemany(
        EVENT_SQL,
        [
            (now, t.idem, actor, t.expect.value, t.to.value, t.note, t.idem)
            for t in todo
            if t.note or t.expect != t.to
        ],
    )
    return [t.idem for t in todo]


async def _held(db: aiosqlite.Connection, owner: str, idems: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for chunk in chunks(idems, 5000):
        async with db.execute(
            _HELD_SQL + _row_lock(db, " OF j"),
            (json.dumps(chunk), owner),
        ) as cur:
            out.update({r[0]: r[1] for r in await cur.fetchall()})
    return out


async def _write_transitions(
    db: aiosqlite.Connection, todo: Sequence[Transition], now: float, owner: str
) -> None:
    # Group by the set of changed columns: one executemany per shape.
    # The caller's Transition is left as it was: the columns written are
    # its changes plus the bookkeeping below.
    groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for t in todo:
        cols = transition_columns(t, now)
        groups[tuple(sorted(cols))].append((t.idem, cols))
    for names, group in groups.items():
        await db.executemany(
            _update_sql(names),
            [[cols[n] for n in names] + [idem, owner] for idem, cols in group],
        )
    results = [t for t in todo if t.result is not None]
    if results:
        await db.executemany(
            _RESULT_SQL,
            [(*result_params(t.idem, t.result, now), t.idem) for t in results if t.result],
        )


_MARK_SENDING_SQL = Sql(
    lambda d: (
        f"UPDATE jobs SET attempts = attempts + 1, inflight = 1, sent_at = {d.p}"
        f" WHERE idem IN (SELECT value FROM {d.each()}) AND lease_owner = {d.p}"
        f" AND status = 'reserving' AND inflight = 0 RETURNING {COLUMNS}"
    )
)
_HELD_SQL = Sql(
    lambda d: (
        f"SELECT j.idem, j.status FROM {d.each('k')}"
        f" {d.cross_join} jobs AS j ON j.idem = k.value WHERE j.lease_owner = {d.p}"
    )
)
#: A job's result by its key (result_params, then the key again).
_RESULT_SQL = Sql(
    lambda d: (
        "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json,"
        f" stored_at) SELECT id, {d.p}, {d.p}, {d.p}, {d.p}, {d.p}, {d.p} FROM jobs"
        f" WHERE idem = {d.p} ON CONFLICT(job) DO UPDATE SET"
        " interaction_id = excluded.interaction_id, output_text = excluded.output_text,"
        " usage = excluded.usage, raw_json = excluded.raw_json,"
        " stored_at = excluded.stored_at"
    )
)


@functools.lru_cache(maxsize=256)
def _update_sql(names: tuple[str, ...]) -> Sql:
    """Set the columns `names` of the row `owner` holds (parameters: the
    values, the key, the owner)."""
    return Sql(
        lambda d: f"UPDATE jobs SET {_assign(d, names)} WHERE idem = {d.p} AND lease_owner = {d.p}"
    )


def _assign(d: Dialect, names: Sequence[str]) -> str:
    """`name = ?, …` for the columns `names`."""
    return ", ".join(f"{n} = {d.p}" for n in names)


def _row_lock(db: aiosqlite.Connection, of: str = "") -> str:
    """Lock the rows a compare-and-set reads before it writes them. SQLite's
    write transaction already excludes every other writer; a PostgreSQL
    session (core/ledger/postgres/session.py) says FOR UPDATE, so another host's write to
    the row waits for this transaction instead of slipping in between."""
    lock = getattr(db, "row_lock", "")
    return f"{lock}{of}" if lock else ""


_STATUS_SQL = Sql(lambda d: f"SELECT status FROM jobs WHERE idem = {d.p}")


def transition_columns(t: Transition, now: float) -> dict[str, Any]:
    """The columns a transition writes: its changes plus the bookkeeping
    (status, state_since on a change of state, the lease dropped, updated_at)."""
    cols = dict(t.changes)
    cols["status"] = t.to.value
    if t.to != t.expect:
        cols["state_since"] = now
    if t.release:
        cols["lease_owner"] = None
        cols["lease_until"] = 0.0
    cols["updated_at"] = now
    return cols


#: `json.dumps(usage, sort_keys=True)` of an answer's usage (parsed from
#: JSON), made once: `dumps` with any option builds a new encoder at every
#: call, once per stored result (core/result_json.py).
_USAGE = acyclic_encoder(ensure_ascii=True)


def result_params(idem: str, result: RemoteInteraction, now: float) -> tuple[Any, ...]:
    """A result's values (idem, interaction_id, output_text, usage, raw_json, stored_at)."""
    return (
        idem,
        result.id,
        result.output_text or "",
        _usage_json(result.usage),
        result.raw_json(),
        now,
    )


def _usage_json(usage: Mapping[str, Any] | None) -> str | None:
    if usage is None:
        return None
    return _USAGE(usage if type(usage) is dict else dict(usage))


async def operator_cas(
    db: aiosqlite.Connection,
    idem: str,
    expect: Sequence[Status],
    to: Status,
    actor: str,
    note: str,
    changes: Mapping[str, Any],
    *,
    me: str,
    now: float,
    dead: Sequence[str],
    inflight: bool | None = None,
) -> Row | None:
    """`Ledger.operator_update`'s statements: the row moves to `to` only from
    an `expect` status (and, given `inflight`, only if its create-in-flight
    flag is that) and if `me` or nobody live (`dead` holders aside) holds
    it. Returns the updated row, or None."""
    cols = dict(changes)
    cols.update(status=to.value, updated_at=now, lease_owner=None, lease_until=0.0)
    names = sorted(cols)
    free, free_params = lease_free_sql(now, dead)
    flag = "" if inflight is None else f" AND inflight = {int(inflight)}"
    async with db.execute(_STATUS_SQL + _row_lock(db), (idem,)) as cur:
        before = await cur.fetchone()
    async with db.execute(
        Sql(
            lambda d: (
                f"UPDATE jobs SET {_assign(d, names)}, state_since = CASE WHEN"
                f" status != {d.p} THEN {d.p} ELSE state_since END WHERE idem = {d.p}"
                f" AND status IN ({', '.join(d.p for _ in expect)}){flag}"
                f" AND (lease_owner = {d.p} OR {free.of(d)}) RETURNING {COLUMNS}"
            )
        ),
        [
            *(cols[n] for n in names),
            to.value,
            now,
            idem,
            *(s.value for s in expect),
            me,
            *free_params,
        ],
    ) as cur:
        got = await cur.fetchone()
    if got is None:
        return None
    await db.execute(
        EVENT_SQL, (now, idem, actor, before[0] if before else None, to.value, note, idem)
    )
    return row_from_tuple(got)
