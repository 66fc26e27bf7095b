"""The durable reclaim ledger: jobs, claims, leases and reads over one SQLite connection.

`LedgerConnection` (core/ledger/sqlite.py) opens, migrates and holds the
connection and its `BEGIN IMMEDIATE` transactions; `core/ledger/schema.py` holds the
schema and the shared SQL; `core/ledger/compare_and_set.py` the writes after a claim.
Here: inserting jobs, claims (single `UPDATE … RETURNING` statements), lease
renewal and release, and the public reads. Every transition appends to
`events` in the transaction that makes it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reclaim_tui.core.ledger.compare_and_set import apply_transitions, mark_sending, operator_cas
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.schema import (
    COLUMNS,
    EVENT_SQL,
    MIGRATIONS,
    ORPHAN_SQL,
    SCHEMA_VERSION,
    chunks,
    lease_free_sql,
    orphan_sql,
    row_from_tuple,
)
from reclaim_tui.core.ledger.sqlite import LedgerConnection
from reclaim_tui.core.models import Actor, Event, Row, Status, StoredResult, Transition
from reclaim_tui.core.row_notes import PENDING_SQL

# The schema names are re-exported: `from reclaim_tui.core.ledger.base import …`
# was their address before core/ledger/schema.py existed.
__all__ = [
    "COLUMNS",
    "MIGRATIONS",
    "ORPHAN_SQL",
    "SCHEMA_VERSION",
    "Claim",
    "Ledger",
    "lease_free_sql",
    "orphan_sql",
    "row_from_tuple",
    "stored_usage",
]


@dataclass(frozen=True, slots=True)
class Claim:
    """Rows a process now holds, and under which owner."""

    owner: str
    rows: list[Row]


class Ledger(LedgerConnection):
    """One connection to a ledger file. Safe to share between tasks of one
    event loop (writes are serialised by an asyncio lock); open one per
    process or per client (engine, console)."""

    #: which engine's SQL this ledger speaks ("sqlite"; core/ledger/postgres.py: "postgres")
    dialect = "sqlite"
    #: appended to a claim's row selection (PostgreSQL: FOR UPDATE SKIP LOCKED)
    claim_lock = ""

    # -- inserting jobs --------------------------------------------------------------
    async def insert_jobs(
        self, jobs: Sequence[tuple[str, str, str]], actor: str
    ) -> tuple[list[str], list[str]]:
        """Reserve new rows (idem, spec_json, model) in one transaction.

        Returns (inserted, already present). An existing key is never
        overwritten: the ledger already owns that job (DESIGN §3 defect 1 is
        about what happens next, and the engine's own passes handle it).
        """
        now = self.clock.now()
        inserted: list[str] = []
        async with self.write() as db:
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
            await db.executemany(
                EVENT_SQL,
                [(now, idem, actor, None, "reserving", "reserved") for idem in inserted],
            )
        present = set(inserted)
        return inserted, [idem for idem, _, _ in jobs if idem not in present]

    # -- claiming --------------------------------------------------------------------
    async def dead_holders(self, me: str) -> list[str]:
        """Owners of live-by-clock leases whose process is provably gone."""
        now = self.clock.now()
        rows = await self._fetchall(
            "SELECT DISTINCT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
            " AND lease_until > ? AND lease_owner != ?",
            (now, me),
        )
        return [r[0] for r in rows if holder_alive(r[0]) is False]

    async def claim_sendable(self, owner: str, *, limit: int, lease_seconds: float) -> Claim:
        """Due `reserving` rows not in flight, under a lease only: each row's
        attempt is committed by `write_batch(sending=…)` right before its own
        create is sent, so a kill leaves unsent rows as they were (rule 3)."""
        return await self._claim(
            owner,
            "status = 'reserving' AND inflight = 0 AND held = 0 AND next_at <= ?",
            [self.clock.now()],
            limit=limit,
            lease_seconds=lease_seconds,
        )

    async def claim_pollable(self, owner: str, *, limit: int, lease_seconds: float) -> Claim:
        """`submitted` rows whose next poll is due (not one whose follow-up
        turn is in flight: recovery settles that one first)."""
        return await self._claim(
            owner,
            "status = 'submitted' AND inflight = 0 AND next_at <= ?",
            [self.clock.now()],
            limit=limit,
            lease_seconds=lease_seconds,
        )

    async def claim_cancel_pending(self, owner: str, *, limit: int, lease_seconds: float) -> Claim:
        """`cancelled` rows whose remote cancel is due to be asked again
        (core/engine/cancelling.py)."""
        return await self._claim(
            owner,
            f"{PENDING_SQL} AND next_at <= ?",
            [self.clock.now()],
            limit=limit,
            lease_seconds=lease_seconds,
        )

    async def claim_undelivered(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        force: bool = False,
        idems: Sequence[str] | None = None,
        exclude: Collection[str] = (),
    ) -> Claim:
        """`done` rows whose sink has to run (again). `force` also takes rows
        whose sink backoff has not run out; `exclude` skips rows already tried."""
        where, params = self._scoped("status = 'done'", force, idems, exclude, "next_at <= ?")
        return await self._claim(owner, where, params, limit=limit, lease_seconds=lease_seconds)

    async def claim_orphans(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        force: bool = False,
        idems: Sequence[str] | None = None,
        exclude: Collection[str] = (),
    ) -> Claim:
        """`reserving` rows whose create may have been sent (in flight) and whose
        lease is free; and `submitted` ones whose follow-up turn (`answer`) is
        in flight, its outcome unknown. Without `force`, held and not-yet-due
        rows are left (a row waiting for an answer is held: its follow-up's
        orphan is taken when due)."""
        where, params = self._scoped(
            "inflight = 1 AND status IN ('reserving', 'submitted')",
            force,
            idems,
            exclude,
            "(held = 0 OR status = 'submitted') AND next_at <= ?",
        )
        return await self._claim(owner, where, params, limit=limit, lease_seconds=lease_seconds)

    def _scoped(
        self,
        where: str,
        force: bool,
        idems: Sequence[str] | None,
        exclude: Collection[str],
        due: str,
    ) -> tuple[str, list[Any]]:
        params: list[Any] = []
        if not force:
            where += f" AND {due}"
            params.append(self.clock.now())
        if idems is not None:
            where += " AND idem IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(list(idems)))
        if exclude:
            where += " AND idem NOT IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(sorted(exclude)))
        return where, params

    async def _claim(
        self,
        owner: str,
        where: str,
        params: Sequence[Any],
        *,
        limit: int,
        lease_seconds: float,
    ) -> Claim:
        """Claim up to `limit` rows matching `where` whose lease is free, in ONE
        `UPDATE … RETURNING`."""
        now = self.clock.now()
        free, free_params = lease_free_sql(now, await self.dead_holders(owner))
        sql = (
            "UPDATE jobs SET prev_owner = lease_owner, lease_owner = ?, lease_until = ?"
            f" WHERE idem IN (SELECT idem FROM jobs WHERE {where} AND {free}"
            f" ORDER BY next_at LIMIT ?{self.claim_lock}) RETURNING {COLUMNS}"
        )
        # updated_at is left alone: a claim is not a state change, and not
        # touching its index keeps a claim cheap (the console shows leases
        # from lease_owner, refreshed with the row's next transition).
        args = [owner, now + lease_seconds, *params, *free_params, limit]
        async with self.write() as db:
            async with db.execute(sql, args) as cur:
                rows = [row_from_tuple(r) for r in await cur.fetchall()]
        return Claim(owner, rows)

    async def renew(self, owner: str, idems: Iterable[str], lease_seconds: float) -> set[str]:
        """Extend the leases `owner` still holds; returns the keys it still holds."""
        keys = list(idems)
        if not keys:
            return set()
        now = self.clock.now()
        held: set[str] = set()
        async with self.write() as db:
            for chunk in chunks(keys, 5000):
                async with db.execute(
                    "UPDATE jobs SET lease_until = ? WHERE lease_owner = ?"
                    " AND idem IN (SELECT value FROM json_each(?)) RETURNING idem",
                    (now + lease_seconds, owner, json.dumps(list(chunk))),
                ) as cur:
                    held.update(r[0] for r in await cur.fetchall())
        return held

    async def release(self, owner: str, idems: Iterable[str]) -> int:
        """Give up the leases `owner` holds on rows it did not work on."""
        keys = list(idems)
        if not keys:
            return 0
        async with self.write() as db:
            cur = await db.execute(
                "UPDATE jobs SET lease_owner = NULL, lease_until = 0 WHERE lease_owner = ?"
                " AND idem IN (SELECT value FROM json_each(?))",
                (owner, json.dumps(keys)),
            )
            return cur.rowcount

    # -- compare-and-set writes -------------------------------------------------------
    async def apply(self, owner: str, actor: Actor, transitions: Sequence[Transition]) -> list[str]:
        """Apply transitions in ONE transaction, each only where `owner` still
        holds the row in the expected status. Returns the idems applied."""
        if not transitions:
            return []
        _, applied = await self.write_batch(owner, actor, transitions=transitions)
        return applied

    async def write_batch(
        self,
        owner: str,
        actor: Actor,
        *,
        sending: Sequence[str] = (),
        transitions: Sequence[Transition] = (),
    ) -> tuple[dict[str, Row], list[str]]:
        """One transaction for a group of writes that arrived together (group
        commit): commit the next attempt of the `sending` rows (attempts + 1,
        in flight, sent_at; rule 3, before their creates go out), and apply
        `transitions`. Each write is a compare-and-set on `owner`'s lease.
        Returns (the marked rows, the idems whose transition applied)."""
        now = self.clock.now()
        async with self.write() as db:
            marked = await mark_sending(db, owner, actor, sending, now)
            applied = await apply_transitions(db, owner, actor, transitions, now)
        return marked, applied

    async def operator_update(
        self,
        idem: str,
        expect: Sequence[Status],
        to: Status,
        actor: str,
        note: str,
        changes: Mapping[str, Any],
        *,
        me: str,
        inflight: bool | None = None,
    ) -> Row | None:
        """An operator's compare-and-set on a row nobody live holds (and,
        given `inflight`, whose create-in-flight flag is that).

        Returns the updated row, or None if the row was not in an expected
        status or is leased by a live holder (the caller says why).
        """
        now = self.clock.now()
        dead = await self.dead_holders(me)
        async with self.write() as db:
            row = await operator_cas(
                db,
                idem,
                expect,
                to,
                actor,
                note,
                changes,
                me=me,
                now=now,
                dead=dead,
                inflight=inflight,
            )
        return row

    async def add_event(self, idem: str, actor: str, note: str, status: str | None) -> None:
        now = self.clock.now()
        async with self.write() as db:
            await db.execute(EVENT_SQL, (now, idem, actor, status, status, note))

    async def before_copy(self) -> None:
        """Before rows are written with their ids (core/ledger/transfer.py): a check
        that after_copy will be allowed (SQLite: nothing to check)."""

    async def after_copy(self) -> None:
        """After rows were written with their ids (core/ledger/transfer.py): SQLite
        numbers the next rows past the largest id by itself."""

    async def sequences_behind(self) -> list[str]:
        """Id counters whose next id a row already has (SQLite: none)."""
        return []

    # -- reading --------------------------------------------------------------------
    async def select(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read for the console's windowed queries (core/ledger/queries.py); tuples
        in the SELECT's column order."""
        return await self._fetchall(sql, params)

    async def get(self, idem: str) -> Row | None:
        rows = await self._fetchall(f"SELECT {COLUMNS} FROM jobs WHERE idem = ?", (idem,))
        return row_from_tuple(rows[0]) if rows else None

    async def get_many(self, idems: Sequence[str]) -> dict[str, Row]:
        out: dict[str, Row] = {}
        for chunk in chunks(idems, 5000):
            for values in await self._fetchall(
                f"SELECT {COLUMNS} FROM jobs WHERE idem IN (SELECT value FROM json_each(?))",
                (json.dumps(list(chunk)),),
            ):
                out[values[0]] = row_from_tuple(values)
        return out

    async def find(self, prefix: str) -> list[Row]:
        """Rows whose key starts with `prefix` (operators type short keys)."""
        rows = await self._fetchall(
            f"SELECT {COLUMNS} FROM jobs WHERE idem >= ? AND idem < ? ORDER BY idem LIMIT 5",
            (prefix, prefix + "\uffff"),
        )
        return [row_from_tuple(r) for r in rows]

    async def iter_rows(self, batch: int = 2000) -> AsyncIterator[Row]:
        """Every row, in key order, a page at a time (exports)."""
        last = ""
        while True:
            page = await self._fetchall(
                f"SELECT {COLUMNS} FROM jobs WHERE idem > ? ORDER BY idem LIMIT ?", (last, batch)
            )
            if not page:
                return
            for values in page:
                yield row_from_tuple(values)
            last = page[-1][0]

    async def result(self, idem: str) -> StoredResult | None:
        rows = await self._fetchall(
            "SELECT idem, interaction_id, output_text, usage, raw_json, stored_at"
            " FROM results WHERE job = (SELECT id FROM jobs WHERE idem = ?)",
            (idem,),
        )
        if not rows:
            return None
        r = rows[0]
        return StoredResult(r[0], r[1], r[2], stored_usage(r[3]), r[4], r[5])

    async def results(self, idems: Sequence[str]) -> dict[str, StoredResult]:
        out: dict[str, StoredResult] = {}
        for chunk in chunks(idems, 5000):
            for r in await self._fetchall(
                "SELECT idem, interaction_id, output_text, usage, raw_json, stored_at"
                " FROM results WHERE job IN"
                " (SELECT id FROM jobs WHERE idem IN (SELECT value FROM json_each(?)))",
                (json.dumps(list(chunk)),),
            ):
                out[r[0]] = StoredResult(r[0], r[1], r[2], stored_usage(r[3]), r[4], r[5])
        return out

    async def events(self, idem: str, limit: int = 10_000) -> list[Event]:
        rows = await self._fetchall(
            "SELECT id, at, idem, actor, from_status, to_status, note FROM events"
            " WHERE job = (SELECT id FROM jobs WHERE idem = ?) ORDER BY id LIMIT ?",
            (idem, limit),
        )
        return [Event(*r) for r in rows]

    async def counts(self) -> dict[str, tuple[int, float | None]]:
        """Per status: (count, oldest state_since)."""
        rows = await self._fetchall(
            "SELECT status, COUNT(*), MIN(state_since) FROM jobs GROUP BY status"
        )
        return {r[0]: (int(r[1]), r[2]) for r in rows}

    async def orphan_count(self, me: str = "", *, dead: Sequence[str] | None = None) -> int:
        """Orphans (ORPHAN_SQL): what `status` and the console's orphans tab
        count. `dead`: the holders known dead (looked up when None)."""
        if dead is None:
            dead = await self.dead_holders(me)
        where, params = orphan_sql(self.clock.now(), dead)
        rows = await self._fetchall(f"SELECT COUNT(*) FROM jobs WHERE {where}", params)
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
