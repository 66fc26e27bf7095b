"""The part of the SQLite ledger that keeps a service's generation in it
(core/ledger/sqlite/generation.py says why and how): started by the service, bumped
by compare-and-set inside each write transaction, read before each pass."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import aiosqlite

from reclaim_tui.core.ledger.identity import FileSnapshot, LedgerReplacedError
from reclaim_tui.core.ledger.sqlite import generation
from reclaim_tui.core.ledger.sqlite.schema import map_sqlite_error
from reclaim_tui.errors import LedgerError

__all__ = ["GenerationGuard"]


class GenerationGuard:
    """Mixed into SqliteLedger: a service's generation, kept in `meta`."""

    path: str
    readonly: bool
    _db: aiosqlite.Connection
    _lock: asyncio.Lock
    #: (meta key, last committed value) while a service guards its generation
    _generation: tuple[str, int] | None = None
    #: what was found when the ledger did not hold the service's commits: never written again
    _lost: str | None = None

    if TYPE_CHECKING:

        def write(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...

        async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def guard_generation(self, owner: str) -> None:
        """From now on, every write transaction bumps this process's
        generation in the ledger by compare-and-set."""
        if self.readonly or self.path == ":memory:":
            return
        key = generation.key_for(owner)
        self._generation = None  # this write is the start, not a bump
        async with self.write() as db:
            await db.execute(generation.START_SQL, (key,))
        self._generation = (key, 0)

    async def generation_change(self, main: FileSnapshot | None = None) -> str | None:
        """What happened to the ledger when it no longer holds the generation
        this process last committed, or when its main file (`main`, read
        without the WAL) holds another history; None when neither (a read each)."""
        if self._lost is not None or self._generation is None:
            return self._lost
        if main is not None:
            self._lost = await generation.branch_change(self._fetchall, main)
            if self._lost is not None:
                return self._lost
        async with self._lock:  # no write of this process between the read and the compare
            key, committed = self._generation
            try:
                async with self._db.execute(generation.READ_SQL, (key,)) as cur:
                    row = await cur.fetchone()
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc
        found = str(row[0]) if row else None
        if found != str(committed):
            self._lost = generation.describe(committed, found)
        return self._lost

    async def _bump_generation(self) -> None:
        """Inside the write transaction, right before COMMIT: the ledger must
        still hold the last value committed, or nothing of it is kept."""
        if self._generation is None:
            return
        key, committed = self._generation
        cur = await self._db.execute(generation.BUMP_SQL, (str(committed + 1), key, str(committed)))
        if cur.rowcount != 1:
            async with self._db.execute(generation.READ_SQL, (key,)) as read:
                row = await read.fetchone()
            self._lost = generation.describe(committed, str(row[0]) if row else None)
            raise LedgerReplacedError(f"{self.path}: {self._lost}; nothing of this write was kept")

    def _bump_generation_now(self, conn: sqlite3.Connection) -> None:
        """`_bump_generation` in the connection's own thread, on its
        `sqlite3.Connection` (a transaction run there in one call:
        core/ledger/sqlite/hot_writes.py)."""
        if self._generation is None:
            return
        key, committed = self._generation
        cur = conn.execute(generation.BUMP_SQL, (str(committed + 1), key, str(committed)))
        if cur.rowcount != 1:
            row = conn.execute(generation.READ_SQL, (key,)).fetchone()
            self._lost = generation.describe(committed, str(row[0]) if row else None)
            raise LedgerReplacedError(f"{self.path}: {self._lost}; nothing of this write was kept")

    async def _generation_settle(self) -> None:
        """After a write that failed or was cancelled, its ROLLBACK queued:
        its COMMIT may have gone through anyway (a statement handed to
        aiosqlite's thread runs). Only this process writes its row, so the
        row says which: one past the last value means committed."""
        if self._generation is None or self._lost is not None:
            return
        key, committed = self._generation
        try:
            async with self._db.execute(generation.READ_SQL, (key,)) as cur:
                row = await cur.fetchone()
        except sqlite3.Error:
            return  # the next pass's check reads it again
        if row is not None and str(row[0]) == str(committed + 1):
            self._generation = (key, committed + 1)

    def _generation_committed(self) -> None:
        # Read once: called in the connection's thread after a hot write's
        # COMMIT, while a close on the event loop may drop the generation.
        held = self._generation
        if held is not None:
            self._generation = (held[0], held[1] + 1)

    async def _drop_generation(self) -> None:
        """On a clean close: the row goes (left behind by a crash, it is harmless)."""
        if self._generation is None or self._lost is not None:
            return
        key, _ = self._generation
        self._generation = None
        with contextlib.suppress(LedgerError):
            async with self.write() as db:
                await db.execute(generation.DROP_SQL, (key,))
