"""The SQLite ledger's statements that add rows and keep the text index.

New rows (`insert_jobs`) get their "reserved" events from ONE `INSERT …
SELECT` over the ids the inserts took, not a statement per row that looks
each key up again. The group commit's statements are
core/ledger/sqlite/thread_writes.py's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import aiosqlite

from reclaim_tui.core.ledger.schema import (
    EVENT_SQL,
    chunks,
)
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_FLUSH_SQL, migration_statements

__all__ = ["SEARCH_MOVES", "insert_jobs", "move_search_queue"]

#: SQLite's largest rowid: past it, new rows take unused ids at random.
_LARGEST_ROWID = 2**63 - 1


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


#: the statements that move the queued rows into the text index
SEARCH_MOVES = tuple(migration_statements(SEARCH_FLUSH_SQL))


async def move_search_queue(db: aiosqlite.Connection) -> None:
    """Every row queued for the text indexes into them, inside the caller's
    transaction (core/ledger/sqlite/schema.py says why rows are queued)."""
    for statement in SEARCH_MOVES:
        await db.execute(statement)
