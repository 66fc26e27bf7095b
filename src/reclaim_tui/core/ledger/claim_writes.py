"""A group commit and the next batch's claim in ONE transaction: one commit
where there were two. A part of `LedgerBase` (base.py), with the claims'
selections both share; the writes are the engine's own (`_write_in`:
sqlite_writes.py, pg_write.py), the claim is the one `UPDATE … RETURNING`
of every claim."""

from __future__ import annotations

import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.ledger.schema import claim_sql, lease_free_sql, row_from_tuple
from reclaim_tui.core.models import Actor, Row, Transition

__all__ = ["DUE", "ClaimWrites", "claim_statement", "pollable", "scoped", "sendable"]

#: A claim's "due now" rule (one parameter: now).
DUE = Sql(lambda d: f"next_at <= {d.p}")
_AMONG_SQL = Sql(lambda d: f" AND {d.filter_in('idem')}")
_NOT_AMONG_SQL = Sql(lambda d: f" AND idem NOT IN (SELECT value FROM {d.each()})")


class ClaimWrites(ABC):
    """The reclaim pass's and the send pass's writes that take their next batch."""

    clock: Clock
    claim_lock: str
    #: A claim scoped to keys is driven from the key list (`_keyed_claim_sql`)
    #: rather than filtered by it (PgLedger).
    keyed_claims = False
    #: The holders provably gone are read inside the claim's transaction
    #: (`_lease_free_in`), not in one of their own before it (PgLedger).
    holders_in_claim = False

    @abstractmethod
    def write(self) -> AbstractAsyncContextManager[Any]: ...

    @abstractmethod
    async def dead_holders(self, me: str) -> list[str]: ...

    async def _lease_free(self, owner: str, now: float) -> tuple[str, list[Any]]:
        """A claim's lease-free rule and its parameters: the holders provably
        gone are read now, before the claim's transaction (SqliteLedger finds
        them inside the claim's statement)."""
        return lease_free_sql(now, await self.dead_holders(owner))

    async def _lease_free_in(self, db: Any, owner: str, now: float) -> tuple[str, list[Any]]:
        """`_lease_free`, its holders read inside the open transaction `db`.
        Only where `holders_in_claim`."""
        raise NotImplementedError

    def _keyed_claim_sql(self, where: str, free: str) -> str:
        """A claim of up to `LIMIT` rows among a JSON array of keys (the first
        parameter) matching `where` and `free`; the other parameters as
        `claim_sql`'s. Only where `keyed_claims`."""
        raise NotImplementedError

    def _claim_sql(self, where: str, free: str) -> str:
        """`claim_sql` of `where` and `free` (PgLedger's raises the owner's
        lease horizon in the same statement)."""
        return claim_sql(where, free, self.claim_lock)

    async def _returned(self, db: Any, sql: str, args: Sequence[Any]) -> list[Any]:
        """The rows one statement returns, inside the open transaction `db`
        (SqliteLedger reads them in one call to its connection's thread)."""
        async with db.execute(sql, args) as cur:
            return list(await cur.fetchall())

    async def _claimed(
        self, db: Any, sql: str, args: Sequence[Any]
    ) -> Callable[[], Awaitable[list[Any]]]:
        """The rows a claim returns inside the open transaction `db`, read by
        awaiting the callable once it committed (PgLedger sends the claim
        with the COMMIT: one round trip); here read at once."""
        rows = await self._returned(db, sql, args)
        return functools.partial(_rows, rows)

    @abstractmethod
    async def _write_in(
        self,
        db: Any,
        owner: str,
        actor: Actor,
        sending: Sequence[str],
        transitions: Sequence[Transition],
        now: float,
    ) -> Callable[[], Awaitable[tuple[dict[str, Row], list[str]]]]: ...

    async def apply_and_claim_pollable(
        self,
        owner: str,
        actor: Actor,
        transitions: Sequence[Transition],
        *,
        limit: int,
        lease_seconds: float,
        exclude: Collection[str] = (),
        now: float | None = None,
    ) -> tuple[list[str], Claim]:
        """`apply(transitions)`, then `claim_pollable(…)`, in ONE transaction (one
        commit: a batch's outcomes and the next batch). `now`: the instant the
        claim's "due" rule reads (the clock's by default), the one `exclude`
        was chosen for. (idems applied, claim)."""
        where, params = pollable(self.clock.now() if now is None else now, exclude)
        _, applied, claim = await self._and_claim(
            owner, actor, (), transitions, where, params, limit, lease_seconds
        )
        return applied, claim

    async def write_and_claim_sendable(
        self,
        owner: str,
        actor: Actor,
        *,
        sending: Sequence[str] = (),
        transitions: Sequence[Transition] = (),
        limit: int,
        lease_seconds: float,
        idems: Sequence[str] | None = None,
    ) -> tuple[dict[str, Row], list[str], Claim]:
        """`write_batch(…)`, then `claim_sendable(…)`, in ONE transaction: the
        send pass's last group commit of a batch takes the next batch."""
        keys = idems if self.keyed_claims else None
        where, params = sendable(self.clock.now(), None if keys is not None else idems)
        return await self._and_claim(
            owner, actor, sending, transitions, where, params, limit, lease_seconds, keys
        )

    async def _and_claim(
        self,
        owner: str,
        actor: Actor,
        sending: Sequence[str],
        transitions: Sequence[Transition],
        where: str,
        params: Sequence[Any],
        limit: int,
        lease_seconds: float,
        keys: Sequence[str] | None = None,
    ) -> tuple[dict[str, Row], list[str], Claim]:
        """A group commit's writes, then a claim of up to `limit` rows matching
        `where`, in ONE transaction: the claim is what the ledger holds once the
        writes applied. (marked rows, idems applied, claim). SqliteLedger runs
        the whole transaction in one call to its connection's thread."""
        now = self.clock.now()
        made = None
        if not self.holders_in_claim:
            made = await claim_statement(self, owner, where, params, limit, lease_seconds, keys)
        claimed = None
        async with self.write() as db:
            collect = await self._write_in(db, owner, actor, sending, transitions, now)
            if limit > 0:
                if made is None:
                    made = await claim_statement(
                        self, owner, where, params, limit, lease_seconds, keys, db
                    )
                claimed = await self._claimed(db, *made)
        marked, applied = await collect()
        rows = [] if claimed is None else [row_from_tuple(r) for r in await claimed()]
        return marked, applied, Claim(owner, rows)


def scoped(
    now: float,
    where: str,
    force: bool,
    idems: Sequence[str] | None,
    exclude: Collection[str],
    due: str,
) -> tuple[str, list[Any]]:
    """A claim's selection: `where`, due by `due` unless `force`d, within
    `idems` when given and outside `exclude`."""
    params: list[Any] = []
    if not force:
        where += " AND " + due
        params.append(now)
    if idems is not None:
        where += _AMONG_SQL
        params.append(json.dumps(list(idems)))
    if exclude:
        where += _NOT_AMONG_SQL
        params.append(json.dumps(sorted(exclude)))
    return where, params


def pollable(now: float, exclude: Collection[str]) -> tuple[str, list[Any]]:
    return scoped(
        now,
        "status = 'submitted' AND inflight = 0",
        False,
        None,
        exclude,
        DUE,
    )


def sendable(now: float, idems: Sequence[str] | None) -> tuple[str, list[Any]]:
    where = "status = 'reserving' AND inflight = 0 AND held = 0"
    return scoped(now, where, False, idems, (), DUE)


async def _rows(rows: list[Any]) -> list[Any]:
    return rows


async def claim_statement(
    ledger: ClaimWrites,
    owner: str,
    where: str,
    params: Sequence[Any],
    limit: int,
    lease_seconds: float,
    keys: Sequence[str] | None = None,
    db: Any = None,
) -> tuple[str, list[Any]]:
    """A claim's statement and its parameters (its lease-free rule:
    `_lease_free`, or `_lease_free_in` the open transaction `db`); among
    `keys` only, when given, by `_keyed_claim_sql` (`where` then names no
    keys)."""
    now = ledger.clock.now()
    if db is None:
        free, free_params = await ledger._lease_free(owner, now)
    else:
        free, free_params = await ledger._lease_free_in(db, owner, now)
    # updated_at is left alone: a claim is not a state change, and not
    # touching its index keeps a claim cheap (the console shows leases
    # from lease_owner, refreshed with the row's next transition).
    args = [owner, now + lease_seconds, *params, *free_params, limit]
    if keys is not None:
        return ledger._keyed_claim_sql(where, free), [json.dumps(list(keys)), *args]
    return ledger._claim_sql(where, free), args
