"""The SQLite ledger's hot writes — a group commit, a claim, and a group
commit that takes the next batch — each ONE call to aiosqlite's thread.

A part of `SqliteLedger` (core/ledger/sqlite/ledger.py). `write()` hands
every statement to the connection's thread on its own (BEGIN, each
statement, each fetch, COMMIT), each hand-over a future, a queue put, the
thread's wake-up and the event loop's. Here the transaction's statements
are made ready on the event loop (core/ledger/sqlite/thread_writes.py) and
the whole transaction — BEGIN IMMEDIATE, the statements, the text index's
move when due, the service's generation bump, COMMIT — runs as one plain
function in that thread (core/ledger/sqlite/aiosqlite_private.py).

The transaction is the thread's from BEGIN to its end: it commits, or any
exception rolls it back there, so no await of the event loop can leave it
open. A cancelled caller marks it abandoned: the thread does not begin it,
or rolls it back instead of committing. Only a cancel that comes while it
commits finds it committed; then the leases it took (its claim's rows, the
rows it marked as sent) are given back, since the caller will never act on
them. Either way the write lock is kept until the thread is done, and what
it did (its commit, what the commit returned, the generation it moved to,
the text index's queue moved) is recorded by the thread itself, so the next
write and the next generation check see it, and the leases are given back
even when the call's task itself was cancelled (asyncio.run's clean-up at
shutdown cancels every task at once) while the thread went on to commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite

from reclaim_tui.core.ledger.base import RELEASE_SQL
from reclaim_tui.core.ledger.claim_writes import claim_statement
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.ledger.schema import row_from_tuple
from reclaim_tui.core.ledger.sqlite import thread_writes
from reclaim_tui.core.ledger.sqlite.aiosqlite_private import in_thread, raw, settled
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_BATCH, map_sqlite_error
from reclaim_tui.core.ledger.sqlite.turn import WriteTurn
from reclaim_tui.core.ledger.sqlite.writes import SEARCH_MOVES
from reclaim_tui.core.models import Actor, Row, Transition
from reclaim_tui.errors import LedgerReadOnlyError

__all__ = ["HotWrites"]

T = TypeVar("T")
#: what a group commit's call returns: the marked rows (id first), the keys
#: whose transition applied, the claimed rows
_Out = tuple[list[tuple[Any, ...]], list[str], list[tuple[Any, ...]]]


class HotWrites:
    """Mixed into SqliteLedger: its hot write transactions, each one call
    to the connection's thread."""

    path: str
    readonly: bool
    claim_lock: str
    _db: aiosqlite.Connection
    _lock: asyncio.Lock
    _search_queued: int
    _turn: WriteTurn | None

    if TYPE_CHECKING:
        from reclaim_tui.core.clock import Clock

        clock: Clock

        def _bump_generation_now(self, conn: sqlite3.Connection) -> None: ...

        def _generation_committed(self) -> None: ...

        async def _lease_free(self, owner: str, now: float) -> tuple[str, list[Any]]: ...

    async def _in_thread(
        self,
        body: Callable[[sqlite3.Connection], T],
        owner: str = "",
        held: Callable[[T], list[str]] | None = None,
    ) -> T:
        """`body(conn)` as one `BEGIN IMMEDIATE` transaction, in ONE call to
        the connection's thread (see the module's text). `held`: the keys
        whose leases `owner` holds by what `body` returned, given back when
        the caller was cancelled but the transaction committed (nobody will
        act on rows a cancelled caller never saw)."""
        if self.readonly:
            raise LedgerReadOnlyError(f"{self.path}: opened read-only")
        async with self._lock:
            turn = self._turn
            # LedgerBusyError past busy_timeout: nothing begun
            ticket = await turn.take() if turn is not None else 0
            stop = [False]
            committed: list[T] = []
            task = in_thread(self._db, self._whole, body, stop, committed, ticket)
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                stop[0] = True  # not begun, or not at COMMIT yet: rolled back there
                await settled(task)  # the lock is the thread's until it is done
                if task.cancelled():
                    # The task itself was cancelled, not only its caller (asyncio.run's
                    # clean-up cancels every task at once): the thread may still be
                    # in the transaction. A call queued behind it returns once it is over.
                    await self._thread_idle()
                keys = held(committed[0]) if held and committed else []
                if keys:
                    give_back = functools.partial(_release, owner=owner, keys=keys)
                    await settled(in_thread(self._db, self._whole, give_back, [False], []))
                raise
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc
            finally:
                if turn is not None:
                    turn.let_go(ticket)  # the thread let go after its COMMIT, unless it never ran

    async def _thread_idle(self) -> None:
        """Wait until every call already handed to the connection's thread has
        run (it runs them in order: a call queued behind them returns after)."""
        while True:
            marker = in_thread(self._db, _nothing)
            await settled(marker)
            if not marker.cancelled():
                return

    def _whole(
        self,
        body: Callable[[sqlite3.Connection], T],
        stop: list[bool],
        committed: list[T],
        ticket: int = 0,
    ) -> T:
        """In the connection's thread: the transaction around `body`. Once
        `stop` is set (its caller was cancelled) it is not begun, or rolled
        back rather than committed. What a committed `body` returned is put
        in `committed`, for a caller whose task was cancelled meanwhile.
        `ticket`: the turn it holds (core/ledger/sqlite/turn.py), let go as
        soon as its COMMIT or ROLLBACK is over; 0 for none."""
        if stop[0]:
            raise _Abandoned
        conn = raw(self._db)
        conn.execute("BEGIN IMMEDIATE")
        try:
            unchanged = conn.total_changes
            out = body(conn)
            moved = self._search_queued >= SEARCH_BATCH
            if moved:
                for statement in SEARCH_MOVES:
                    conn.execute(statement)
            # A claim that found nothing changed no row: its COMMIT writes no
            # WAL frame and syncs nothing, unless the generation is bumped —
            # and nothing written needs the bump's check (the next pass's
            # generation check still sees a replaced ledger). The body's
            # statements only insert, update and delete: each is counted.
            wrote = conn.total_changes != unchanged
            if wrote:
                self._bump_generation_now(conn)  # a service's (core/ledger/sqlite/generation.py)
            if stop[0]:
                raise _Abandoned
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise
        finally:
            # The next writer's turn as soon as the lock is SQLite's own again.
            # A give-back after a cancel runs without a turn (SQLite's lock
            # still guards it): its ticket 0 lets go of nothing, whichever
            # later write holds the turn when it runs.
            if self._turn is not None:
                self._turn.let_go(ticket)
        if moved:  # only once committed: a failed COMMIT moved nothing
            self._search_queued = 0
        committed.append(out)
        if wrote:
            self._generation_committed()
        return out

    async def _batch(
        self,
        owner: str,
        actor: Actor,
        sending: Sequence[str],
        transitions: Sequence[Transition],
        claim: tuple[str, list[Any]] | None,
    ) -> tuple[dict[str, Row], list[str], list[Row]]:
        """A group commit's writes (and a claim after them) in one call."""
        batch = thread_writes.prepare(owner, actor, sending, transitions, self.clock.now())
        batch.claim = claim
        # a list, not a generator: a resume per transition otherwise
        queued = len([t for t in transitions if "handle" in t.changes])

        def body(conn: sqlite3.Connection) -> _Out:
            # counted in the thread, under the write lock: another write's
            # transaction may be resetting the count there right now
            self._search_queued += queued
            return thread_writes.run(conn, batch)

        try:
            marked, applied, claimed = await self._in_thread(body, owner, _held_by_batch)
        finally:
            # aiosqlite's thread keeps the last call it ran until it is handed
            # the next, and with it `body` and the batch: its results' texts
            # would outlive the write, beside the next group's (the pass's
            # result budget counts one group at a time).
            batch.moves.clear()
        rows = {}
        for r in marked:
            row = row_from_tuple(r[1:])
            rows[row.idem] = row
        return rows, applied, [row_from_tuple(r) for r in claimed]

    async def write_batch(
        self,
        owner: str,
        actor: Actor,
        *,
        sending: Sequence[str] = (),
        transitions: Sequence[Transition] = (),
    ) -> tuple[dict[str, Row], list[str]]:
        """`LedgerBase.write_batch` in one call to the connection's thread."""
        marked, applied, _ = await self._batch(owner, actor, sending, transitions, None)
        return marked, applied

    async def _claim(
        self,
        owner: str,
        where: str,
        params: Sequence[Any],
        *,
        limit: int,
        lease_seconds: float,
    ) -> Claim:
        """`LedgerBase._claim` in one call to the connection's thread."""
        sql, args = await claim_statement(self, owner, where, params, limit, lease_seconds)  # type: ignore[arg-type]
        rows = await self._in_thread(
            lambda conn: conn.execute(sql, args).fetchall(), owner, _held_by_claim
        )
        return Claim(owner, [row_from_tuple(r) for r in rows])

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
        """`ClaimWrites._and_claim` in one call to the connection's thread
        (SQLite's claims are never keyed: `keys` is always None here)."""
        claim = None
        if limit > 0:
            claim = await claim_statement(self, owner, where, params, limit, lease_seconds)  # type: ignore[arg-type]
        marked, applied, rows = await self._batch(owner, actor, sending, transitions, claim)
        return marked, applied, Claim(owner, rows)


class _Abandoned(Exception):
    """A transaction whose caller was cancelled before it committed."""


def _nothing() -> None:
    return None


def _held_by_claim(rows: list[tuple[Any, ...]]) -> list[str]:
    """The keys a claim took (its rows as returned: the key first)."""
    return [r[0] for r in rows]


def _held_by_batch(out: _Out) -> list[str]:
    """The keys a group commit left leased to its owner: the rows it marked
    as sent (id, then the key) and the rows its claim took."""
    marked, _, claimed = out
    return [r[1] for r in marked] + [r[0] for r in claimed]


def _release(conn: sqlite3.Connection, *, owner: str, keys: list[str]) -> None:
    conn.execute(RELEASE_SQL, (owner, json.dumps(keys)))
