"""A group commit on PostgreSQL in one round trip.

`LedgerBase.write_batch` (core/ledger/compare_and_set.py) reads before it
writes: the marked rows, then the rows it holds, then one statement per row
and per event, each a round trip. Here the same writes are a few
set-based statements sent together in one pipeline with BEGIN and COMMIT
(core/ledger/postgres/session.py), their results read once the COMMIT is back:

  mark     one `UPDATE … RETURNING` of the rows to send, its events
           appended in the same statement (a data-modifying `WITH`);
  lock     the transitions' rows `FOR UPDATE`, in key order: the one order
           every writer of several rows takes (no lock cycle);
  apply    per shape of changed columns, one `UPDATE … FROM json_to_recordset(…)`
           where the row is held in the expected status, with its results
           upserted and its events appended in the same statement.

The rules are those of core/ledger/compare_and_set.py, row for row: a transition applies
only where `owner` holds the row in the `expect` status it had before the
batch (the rows are locked first, so nothing else moves them in between);
an event per applied transition that changes the state or says something;
a result stored with its transition. A batch these statements cannot say
the same way (a key twice among the transitions, whose second compare must
see the state before the first; a column not known here) is left to the
shared statements (`shapes` returns None).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from reclaim_tui.core.ledger.compare_and_set import transition_columns
from reclaim_tui.core.ledger.postgres.json_rows import json_rows
from reclaim_tui.core.ledger.postgres.session import PgSession
from reclaim_tui.core.ledger.schema import COLUMNS, row_from_tuple
from reclaim_tui.core.models import Actor, RemoteInteraction, Row, Transition

__all__ = ["PLAN", "collect", "send", "shapes"]

_INTEGER = ("attempts", "polls", "inflight", "held", "duplicates", "error_streak", "outside_streak")
_REAL = (
    "lease_until", "next_at", "created_at", "state_since", "submitted_at", "done_at",
    "consumed_at", "updated_at", "sent_at",
)  # fmt: skip
_TEXT = ("spec", "model", "status", "handle", "lease_owner", "last_error", "prev_owner")
#: the array type each writable column is sent as
_TYPES = {
    **{c: "bigint" for c in _INTEGER},
    **{c: "float8" for c in _REAL},
    **{c: "text" for c in _TEXT},
}
_RETURNING = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))

# Only the key's unique index serves these statements, whatever the planner
# believes of the table (a fresh one has no statistics; a cached index probe
# costs far less than its model says): the owner and the status are compared
# through COALESCE, which no index of theirs can answer, so a batch of keys
# joined to jobs was planned as a scan of the whole table, once per
# statement. Sequential and bitmap scans are off for the transaction
# (`PLAN`), and so are hash and merge joins (a batch read from its JSON
# parameter is guessed at a hundred rows, for which a pass over the whole
# key index looked cheaper): the keys are probed one by one, and no GIN
# index (bitmap scans only) is taken for `idem = …`: with its pending list unmerged a probe
# through one is orders of magnitude slower than through the unique index.
PLAN = (
    "SELECT set_config('enable_bitmapscan', 'off', true),"
    " set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),"
    " set_config('enable_mergejoin', 'off', true)"
)
_MARK = (
    "WITH m AS (UPDATE jobs AS j SET attempts = j.attempts + 1, inflight = 1, sent_at = %(now)s"
    " FROM (SELECT DISTINCT value AS idem FROM json_array_elements_text(%(idems)s::json)) AS k"
    " WHERE j.idem = k.idem"
    " AND COALESCE(j.lease_owner, '') = %(owner)s AND COALESCE(j.status, '') = 'reserving'"
    " AND j.inflight = 0"
    f" RETURNING j.id, {', '.join('j.' + c.strip() for c in COLUMNS.split(','))}),"
    " e AS (INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " SELECT %(now)s, m.id, m.idem, %(actor)s, 'reserving', 'reserving',"
    " 'attempt ' || m.attempts || ': sending create' FROM m ORDER BY m.id)"
    f" SELECT {_RETURNING} FROM m"
)
_LOCK = (
    "SELECT 1 FROM json_array_elements_text(%(idems)s::json) AS k(idem)"
    " JOIN jobs AS j ON j.idem = k.idem"
    " WHERE COALESCE(j.lease_owner, '') = %(owner)s ORDER BY j.idem COLLATE \"C\" FOR UPDATE OF j"
)
# The result and the event of each row `u` updated, from `u` alone: joined
# back to `t` the planner saw one row of `u` and compared every pair.
_RESULT = (
    "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json, stored_at)"
    " SELECT u.id, u.idem, u.r_id, u.r_text, u.r_usage, u.r_raw, %(now)s"
    " FROM u WHERE u.r_id IS NOT NULL ORDER BY u.n"
    " ON CONFLICT (job) DO UPDATE SET"
    " interaction_id = excluded.interaction_id, output_text = excluded.output_text,"
    " usage = excluded.usage, raw_json = excluded.raw_json, stored_at = excluded.stored_at"
)
_EVENT = (
    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " SELECT %(now)s, u.id, u.idem, %(actor)s, u.expect, u.to_status, u.note"
    " FROM u WHERE u.ev = 1 ORDER BY u.n"
)


Shapes = dict[tuple[str, ...], list[tuple[int, Transition, dict[str, Any]]]]


def shapes(transitions: Sequence[Transition], now: float) -> Shapes | None:
    """The transitions grouped by the columns they write (as
    core/ledger/compare_and_set.py writes them); None if these statements cannot say them."""
    if len({t.idem for t in transitions}) != len(transitions):
        return None
    groups: Shapes = defaultdict(list)
    for n, t in enumerate(transitions):
        cols = transition_columns(t, now)  # what the shared statements write
        if not set(cols) <= _TYPES.keys():
            return None
        groups[tuple(sorted(cols))].append((n, t, cols))
    return groups


def _value(column: str, value: Any) -> Any:
    """`value` as its column's array holds it (a flag given as a bool: 0/1)."""
    if value is None:
        return None
    kind = _TYPES[column]
    if kind == "bigint":
        return int(value)
    if kind == "float8":
        return float(value)
    return str(value)


def _apply_sql(names: tuple[str, ...]) -> str:
    fields = ", ".join(f"c_{c} {_TYPES[c]}" for c in names)
    assign = ", ".join(f"{c} = t.c_{c}" for c in names)
    return (
        "WITH t AS (SELECT * FROM json_to_recordset(%(rows)s::json)"
        " AS t(n int, idem text, expect text, to_status text, note text, ev int, r_id text,"
        f" r_text text, r_usage text, r_raw text, {fields})),"
        f" u AS (UPDATE jobs AS j SET {assign} FROM t WHERE j.idem = t.idem"
        " AND COALESCE(j.lease_owner, '') = %(owner)s AND COALESCE(j.status, '') = t.expect"
        " RETURNING j.id, t.n, t.idem, t.expect, t.to_status, t.note, t.ev, t.r_id, t.r_text,"
        " t.r_usage, t.r_raw),"
        f" r AS ({_RESULT}), e AS ({_EVENT}) SELECT n FROM u"
    )


def _result(result: RemoteInteraction | None) -> tuple[Any, ...]:
    """(interaction id, output text, usage, raw JSON) as
    core/ledger/compare_and_set.py stores them."""
    if result is None:
        return (None, None, None, None)
    usage = json.dumps(dict(result.usage), sort_keys=True) if result.usage is not None else None
    return (result.id, result.output_text or "", usage, result.raw_json())


def _apply_params(
    names: tuple[str, ...],
    group: list[tuple[int, Transition, dict[str, Any]]],
    base: dict[str, Any],
) -> dict[str, Any]:
    """The group's rows as one JSON parameter (core/ledger/postgres/json_rows.py)."""
    rows = []
    for n, t, cols in group:
        r_id, r_text, r_usage, r_raw = _result(t.result)
        row = {
            "n": n,
            "idem": t.idem,
            "expect": t.expect.value,
            "to_status": t.to.value,
            "note": t.note,
            "ev": int(bool(t.note or t.expect != t.to)),
            "r_id": r_id,
            "r_text": r_text,
            "r_usage": r_usage,
            "r_raw": r_raw,
        }
        for c in names:
            row[f"c_{c}"] = _value(c, cols[c])
        rows.append(row)
    return {**base, "rows": json_rows(rows)}


Sent = tuple[Any, list[Any]]


async def send(
    db: PgSession,
    owner: str,
    actor: Actor,
    sending: Sequence[str],
    groups: Shapes,
    now: float,
) -> Sent:
    """Send the batch's statements into `db`'s pipeline; nothing is waited
    for (`collect` reads what they returned once the transaction committed)."""
    base = {"now": now, "owner": owner, "actor": str(actor)}
    await db.send(PLAN, None)
    marked = None
    if sending:
        marked = await db.send(_MARK, {**base, "idems": json_rows(list(sending))})
    applied = []
    if groups:
        idems = sorted(t.idem for group in groups.values() for _, t, _ in group)
        await db.send(_LOCK, {**base, "idems": json_rows(idems)})
        for names, group in groups.items():
            applied.append(await db.send(_apply_sql(names), _apply_params(names, group, base)))
    return marked, applied


async def collect(
    sent: Sent, transitions: Sequence[Transition]
) -> tuple[dict[str, Row], list[str]]:
    """(the marked rows, the idems whose transition applied, in the
    transitions' order) from the results of `send`'s statements."""
    marked_cur, applied_curs = sent
    marked: dict[str, Row] = {}
    if marked_cur is not None:
        marked = {r.idem: r for r in map(row_from_tuple, await marked_cur.fetchall())}
    done: set[int] = set()
    for cur in applied_curs:
        done.update(r[0] for r in await cur.fetchall())
    return marked, [t.idem for n, t in enumerate(transitions) if n in done]
