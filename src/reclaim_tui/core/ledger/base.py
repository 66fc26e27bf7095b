"""What both engines share: claims, lease renewal and release, the
compare-and-set writes and the public reads, each statement written once
(in both engines' SQL where they differ: core/ledger/dialect.py).

`LedgerBase` is the abstract base of `SqliteLedger` (core/ledger/sqlite/ledger.py)
and `PgLedger` (core/ledger/postgres/ledger.py); it runs its statements through the
two things each engine gives it: `write()` (one transaction) and
`_fetchall()` (one locked read). Claims are single `UPDATE … RETURNING` statements;
every transition appends to `events` in the transaction that makes it
(core/ledger/compare_and_set.py); the reads are core/ledger/reads.py.
"""

from __future__ import annotations

import asyncio
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.claim_writes import (
    DUE,
    ClaimWrites,
    claim_statement,
    pollable,
    scoped,
    sendable,
)
from reclaim_tui.core.ledger.compare_and_set import apply_transitions, mark_sending, operator_cas
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.identity import FileSnapshot
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.ledger.public_reads import PublicReads
from reclaim_tui.core.ledger.schema import (
    EVENT_SQL,
    chunks,
    row_from_tuple,
)
from reclaim_tui.core.models import Actor, Row, Status, Transition
from reclaim_tui.core.row_notes import PENDING_SQL

__all__ = ["LIVE_LEASES_SQL", "RELEASE_SQL", "LedgerBase"]

# (me, now): the owners of a lease live at `now`, other than `me`, found by
# a skip over the lease owner's index (jobs_leased): each step seeks the next
# owner after the last, the asking process's rows are never read, and another
# owner's lease is tested by the first live one found. Reading every leased row
# instead (SELECT DISTINCT) made each claim cost as many rows as the asking
# process holds. PostgreSQL has no index on the owner: it reads its lease
# horizons (core/ledger/postgres/holders.py).
LIVE_LEASES_SQL = Sql(
    lambda d: (
        "WITH RECURSIVE owners(owner) AS ("
        " SELECT (SELECT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
        "  ORDER BY lease_owner LIMIT 1)"
        " UNION ALL SELECT (SELECT j.lease_owner FROM jobs AS j WHERE j.lease_owner > o.owner"
        "  ORDER BY j.lease_owner LIMIT 1) FROM owners AS o WHERE o.owner IS NOT NULL)"
        f" SELECT o.owner FROM owners AS o WHERE o.owner IS NOT NULL AND o.owner != {d.p}"
        " AND EXISTS (SELECT 1 FROM jobs AS j WHERE j.lease_owner = o.owner"
        f" AND j.lease_until > {d.p})"
    )
)
_RENEW_SQL = Sql(
    lambda d: (
        f"UPDATE jobs SET lease_until = {d.p} WHERE lease_owner = {d.p}"
        f" AND idem IN (SELECT value FROM {d.each()}) RETURNING idem"
    )
)
# (owner, keys as a JSON array): give up `owner`'s leases on those rows.
RELEASE_SQL = Sql(
    lambda d: (
        "UPDATE jobs SET lease_owner = NULL, lease_until = 0"
        f" WHERE lease_owner = {d.p} AND idem IN (SELECT value FROM {d.each()})"
    )
)


class LedgerBase(PublicReads, ClaimWrites, ABC):
    """The engine-agnostic part of a ledger (see the module's text)."""

    #: which engine's SQL this ledger speaks ("sqlite" or "postgres")
    dialect = "sqlite"
    #: appended to a claim's row selection (PostgreSQL: FOR UPDATE SKIP LOCKED)
    claim_lock = ""
    #: (lease end, owner, keys as a JSON array): the renewal, returning the
    #: keys still held (PostgreSQL's also raises the owner's lease horizon)
    renew_sql: str = _RENEW_SQL
    prune_before_sql: str | None = None

    def __init__(self, path: str, clock: Clock, *, readonly: bool) -> None:
        self.path = path
        self.clock = clock
        self.readonly = readonly
        self._lock = asyncio.Lock()
        #: the ledger's own id (core/ledger/identity.py); None on PostgreSQL
        self.ledger_id: str | None = None
        #: why the console's text filter has no index (None: it has one)
        self.text_index_note: str | None = None

    @abstractmethod
    def write(self) -> AbstractAsyncContextManager[Any]:
        """One write transaction (the engine's own discipline)."""

    @abstractmethod
    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """One locked read of SQLite-dialect SQL."""

    async def checkpoint(self) -> None:
        """Nothing at a clean exit (PostgreSQL); SqliteLedger's empties its WAL."""
        return None

    def queued_for_search(self, rows: int) -> None:
        """A write of this process queued `rows` rows for the text index
        (SQLite's; PostgreSQL indexes its rows as it writes them: nothing)."""
        return None

    # -- claiming --------------------------------------------------------------------
    async def guard_generation(self, owner: str) -> None:
        """A ledger on a server cannot be put back under a process: nothing
        to guard (SQLite overrides this: core/ledger/sqlite/generation.py)."""
        return None

    async def generation_change(self, main: FileSnapshot | None = None) -> str | None:
        return None

    async def dead_holders(self, me: str) -> list[str]:
        """Owners of live-by-clock leases whose process is provably gone."""
        rows = await self._fetchall(LIVE_LEASES_SQL, (me, self.clock.now()))
        return [r[0] for r in rows if holder_alive(r[0]) is False]

    async def claim_sendable(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        idems: Sequence[str] | None = None,
    ) -> Claim:
        """Due `reserving` rows not in flight (of `idems` only, when given),
        under a lease only: each row's attempt is committed by
        `write_batch(sending=…)` right before its own create is sent, so a
        kill leaves unsent rows as they were (rule 3)."""
        where, params = sendable(self.clock.now(), idems)
        return await self._claim(owner, where, params, limit=limit, lease_seconds=lease_seconds)

    async def claim_pollable(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        exclude: Collection[str] = (),
    ) -> Claim:
        """`submitted` rows whose next poll is due (not one whose follow-up
        turn is in flight: recovery settles that one first); `exclude` skips
        rows this pass already polled."""
        where, params = pollable(self.clock.now(), exclude)
        return await self._claim(owner, where, params, limit=limit, lease_seconds=lease_seconds)

    async def claim_cancel_pending(self, owner: str, *, limit: int, lease_seconds: float) -> Claim:
        """`cancelled` rows whose remote cancel is due to be asked again
        (core/engine/cancelling.py)."""
        return await self._claim(
            owner,
            f"{PENDING_SQL} AND " + DUE,
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
        where, params = scoped(self.clock.now(), "status = 'done'", force, idems, exclude, DUE)
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
        where, params = scoped(
            self.clock.now(),
            "inflight = 1 AND status IN ('reserving', 'submitted')",
            force,
            idems,
            exclude,
            "(held = 0 OR status = 'submitted') AND " + DUE,
        )
        return await self._claim(owner, where, params, limit=limit, lease_seconds=lease_seconds)

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
        sql, args = await claim_statement(self, owner, where, params, limit, lease_seconds)
        async with self.write() as db:
            rows = [row_from_tuple(r) for r in await self._returned(db, sql, args)]
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
                    self.renew_sql,
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
                RELEASE_SQL,
                (owner, json.dumps(keys)),
            )
            return int(cur.rowcount)

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
            collect = await self._write_in(db, owner, actor, sending, transitions, now)
        return await collect()

    async def _write_in(
        self,
        db: Any,
        owner: str,
        actor: Actor,
        sending: Sequence[str],
        transitions: Sequence[Transition],
        now: float,
    ) -> Callable[[], Awaitable[tuple[dict[str, Row], list[str]]]]:
        """`write_batch`'s statements inside the open transaction `db`; what
        they returned is read by awaiting the callable, after the commit
        (an engine may read its answers only then)."""
        marked = await mark_sending(db, owner, actor, sending, now)
        applied = await apply_transitions(db, owner, actor, transitions, now)
        return functools.partial(_ready, marked, applied)

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
            await db.execute(EVENT_SQL, (now, idem, actor, status, status, note, idem))


async def _ready(marked: dict[str, Row], applied: list[str]) -> tuple[dict[str, Row], list[str]]:
    return marked, applied
