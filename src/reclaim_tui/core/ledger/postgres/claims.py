"""PostgreSQL's claims: among named keys, driven from the keys; and the
lease holders provably gone found inside the claim's transaction.

The send pass right after a submit claims among the keys it just reserved.
The shared claim (core/ledger/schema.py `claim_sql`) finds its rows through
the due index and filters them by the key list: every due row outside the
list is read and dropped, claim after claim, so a large submit's claims cost
the server in proportion to the square of its size. The planner cannot be
trusted to drive from the list by itself (on a freshly filled table it knows
nothing of the list's size, and `IN`/`= ANY` were planned as that same walk
or as a join reading the list again per row). Here the statement's shape
leaves it no such choice:

- `keyed` (materialized: planned and run once, on its own): each distinct
  key, looked up by the unique key index (a LATERAL subquery with a LIMIT is
  a lookup per key, never a join the planner may turn around), in the
  claim's order: the first due first, and of those due at the same moment
  the list's order (the submit's: a chain's first job before its
  follow-up); the rows the UPDATE returns are put back in that order;
- the rows taken: each candidate in that order is locked by its own LATERAL
  `FOR UPDATE SKIP LOCKED` lookup, which re-checks the claim's rule on the
  row as locked; the LIMIT stops the loop once enough rows were locked, so
  a candidate that fails the re-check is not claimed, and a row another transaction
  holds is skipped, as by the shared claim.

Every claim's lease-free rule names the holders provably gone
(core/ledger/owner.py: only this host's processes can be judged, by the
client, never by the server). Their owners are read by the claim's own
transaction, sent in the same round trip as the writes before it, instead
of by a transaction of their own before it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from reclaim_tui.core.ledger.base import LedgerBase
from reclaim_tui.core.ledger.claim_writes import claim_statement, sendable
from reclaim_tui.core.ledger.dialect import POSTGRES, text_for
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.ledger.postgres.holders import LIVE_HOLDERS, horizon_claim_sql, raise_horizon
from reclaim_tui.core.ledger.schema import COLUMNS, lease_free_sql, row_from_tuple

__all__ = ["KeyedClaims", "keyed_claim_sql"]


def keyed_claim_sql(where: str, free: str) -> str:
    """(keys as a JSON array, owner, lease end, `where`'s and `free`'s
    parameters, limit): the claim among the keys (see the module's text)."""
    # An UPDATE returns its rows in the order it met them (by key, through
    # the key index), not the claim's: they are put back in the claim's order
    # (a claim does not move next_at; of rows due at once, the list's order,
    # which is the submit's: a chain's first job before its follow-up). The
    # keys taken are collected in that order, so a row's place among them
    # is its rank: found in that short array, not by joining the rows taken
    # to the whole window (with hash joins off, as a group commit's
    # transaction has them, every pair of the two would be compared). The
    # parameters come in the shared claim's order (`lease` first). The
    # owner's lease horizon is raised by the same statement
    # (core/ledger/postgres/holders.py).
    return (
        "WITH keyed AS MATERIALIZED (SELECT j.idem, k.n FROM (SELECT value, min(n) AS n"
        " FROM json_array_elements_text(%s::json) WITH ORDINALITY AS _each(value, n)"
        " GROUP BY value) AS k"
        " CROSS JOIN LATERAL (SELECT idem, next_at FROM jobs WHERE idem = k.value LIMIT 1)"
        " AS j ORDER BY j.next_at, k.n),"
        " lease AS (SELECT %s::text AS owner, %s::float8 AS until),"
        " picked AS MATERIALIZED (SELECT ARRAY(SELECT t.idem FROM keyed CROSS JOIN LATERAL"
        f" (SELECT idem FROM jobs WHERE idem = keyed.idem AND {text_for(where, POSTGRES)}"
        f" AND {text_for(free, POSTGRES)} FOR UPDATE SKIP LOCKED) AS t LIMIT %s) AS idems),"
        " taken AS (UPDATE jobs SET prev_owner = lease_owner,"
        " lease_owner = (SELECT owner FROM lease), lease_until = (SELECT until FROM lease)"
        f" WHERE idem = ANY((SELECT idems FROM picked)::text[]) RETURNING {COLUMNS}),"
        + raise_horizon("taken", "(SELECT owner FROM lease)", "(SELECT until FROM lease)")
        + f" SELECT {COLUMNS} FROM taken"
        " ORDER BY next_at, array_position((SELECT idems FROM picked), idem)"
    )


class KeyedClaims(LedgerBase):
    """PgLedger's claims among named keys (a part of it)."""

    keyed_claims = True
    holders_in_claim = True

    def _keyed_claim_sql(self, where: str, free: str) -> str:
        return keyed_claim_sql(where, free)

    def _claim_sql(self, where: str, free: str) -> str:
        return horizon_claim_sql(where, free)

    async def claim_sendable(
        self,
        owner: str,
        *,
        limit: int,
        lease_seconds: float,
        idems: Sequence[str] | None = None,
    ) -> Claim:
        """As LedgerBase's; among `idems`, driven from them."""
        if idems is None:
            return await super().claim_sendable(owner, limit=limit, lease_seconds=lease_seconds)
        where, params = sendable(self.clock.now(), None)
        return await self._claim_among(owner, where, params, limit, lease_seconds, idems)

    async def _claim(
        self,
        owner: str,
        where: str,
        params: Sequence[Any],
        *,
        limit: int,
        lease_seconds: float,
    ) -> Claim:
        """As LedgerBase's, with its holders read inside its transaction."""
        return await self._claim_among(owner, where, params, limit, lease_seconds, None)

    async def _claim_among(
        self,
        owner: str,
        where: str,
        params: Sequence[Any],
        limit: int,
        lease_seconds: float,
        keys: Sequence[str] | None,
    ) -> Claim:
        async with self.write() as db:
            sql, args = await claim_statement(
                self, owner, where, params, limit, lease_seconds, keys, db
            )
            claimed = await self._claimed(db, sql, args)
        return Claim(owner, [row_from_tuple(r) for r in await claimed()])

    async def _claimed(
        self, db: Any, sql: str, args: Sequence[Any]
    ) -> Callable[[], Awaitable[list[Any]]]:
        """The claim sent, its rows read after the COMMIT: the claim and the
        COMMIT share one round trip. An error of the claim fails the COMMIT,
        which rolls the whole transaction back."""
        cur = await db.send(text_for(sql, POSTGRES), args)
        return cast("Callable[[], Awaitable[list[Any]]]", cur.fetchall)

    async def _lease_free_in(self, db: Any, owner: str, now: float) -> tuple[str, list[Any]]:
        """The holders of live leases other than `owner` (their horizons,
        core/ledger/postgres/holders.py), read in the claim's transaction and
        judged here by owner.py's rule: a holder is gone only when provably
        so. Sent with the statements before it: no round trip of its own."""
        # Sent as the hot path's statements are: prepared where the
        # connection allows it (its recursive plan costs more to make than
        # to run).
        owners = await (await db.send(LIVE_HOLDERS, (owner, now))).fetchall()
        return lease_free_sql(now, [o[0] for o in owners if holder_alive(o[0]) is False])
