"""The ledger in an SQLite file, over one aiosqlite connection, under the
house's SQLite discipline.

STYLE.md §5, DESIGN.md §2: WAL, `synchronous=FULL`, `busy_timeout`,
autocommit connections with an explicit `BEGIN IMMEDIATE` for every
transaction that writes. Opening refuses a foreign or newer file before a
byte of it is written, then runs the numbered migrations of
`core/ledger/sqlite/schema.py`, then reads (and marks beside the file) the
ledger's id (`core/ledger/identity.py`); the steps of opening a file are
core/ledger/sqlite/open_file.py's. The statements both engines share
are `LedgerBase`'s (core/ledger/base.py); `open_ledger`
(core/ledger/opening.py) is how callers open one.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import aiosqlite

from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.ledger.base import LedgerBase
from reclaim_tui.core.ledger.dialect import SQLITE, text_for
from reclaim_tui.core.ledger.identity import (
    read_only_uri,
    refuse_linked,
    refuse_other_ledger,
    refuse_replaced,
)
from reclaim_tui.core.ledger.schema import COLUMNS
from reclaim_tui.core.ledger.sqlite import holders
from reclaim_tui.core.ledger.sqlite import writes as sqlite_writes
from reclaim_tui.core.ledger.sqlite.aiosqlite_private import awaited_in_thread, raw, settled
from reclaim_tui.core.ledger.sqlite.generation_guard import GenerationGuard
from reclaim_tui.core.ledger.sqlite.hot_writes import HotWrites
from reclaim_tui.core.ledger.sqlite.open_file import (
    close_quietly,
    configure,
    identify,
    reap,
    refuse_foreign,
    refuse_missing,
    user_version,
)
from reclaim_tui.core.ledger.sqlite.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SEARCH_BATCH,
    map_sqlite_error,
    migration_statements,
    repair_edited,
)
from reclaim_tui.core.ledger.sqlite.turn import WriteTurn, open_turn
from reclaim_tui.errors import LedgerError, LedgerReadOnlyError

__all__ = ["SqliteLedger"]


#: `claim_sql` (core/ledger/schema.py) on SQLite, its rows taken by id:
#: (owner, lease's end, `where`'s and `free`'s parameters, limit).
_CLAIM_BY_ID = (
    "UPDATE jobs SET prev_owner = lease_owner, lease_owner = ?, lease_until = ?"
    " WHERE id IN (SELECT id FROM jobs WHERE {where} AND {free} ORDER BY next_at LIMIT ?)"
    f" RETURNING {COLUMNS}"
)


class SqliteLedger(HotWrites, GenerationGuard, LedgerBase):
    """A ledger in one SQLite file: opening, migrating, `BEGIN IMMEDIATE`
    write transactions and locked reads over one connection; writes are
    serialised by an asyncio lock. The hot writes run each transaction in
    one call to the connection's thread (core/ledger/sqlite/hot_writes.py)."""

    dialect = "sqlite"

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: str,
        clock: Clock,
        *,
        readonly: bool,
    ) -> None:
        super().__init__(path, clock, readonly=readonly)
        self._db = db
        #: rows this process queued for the text index since it last moved the queue
        self._search_queued = 0
        #: this connection's turn among the processes writing the file
        #: (core/ledger/sqlite/turn.py); None: read-only, in memory, or no lock file
        self._turn: WriteTurn | None = None

    # -- opening -----------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        readonly: bool = False,
        create: bool = True,
    ) -> Self:
        """Open (and migrate) a ledger. Raises a LedgerError subclass.

        A file that is not a reclaim-tui ledger, or one written by a newer
        version, is refused before a byte of it is written. A read-only open
        of a file on a read-only mount (where SQLite cannot create the WAL's
        shared-memory file) falls back to an immutable open."""
        spath = str(path)
        if spath != ":memory:" and not create:
            refuse_missing(spath)
        clock = clock or SystemClock()
        if spath != ":memory:" and not readonly:
            refuse_replaced(spath)  # a ledger was here: never start a new one over it
            refuse_linked(spath)
        try:
            return await cls._connect(spath, clock, busy_timeout, readonly, immutable=False)
        except LedgerReadOnlyError:
            if not readonly or not Path(spath).is_file():
                raise
            # https://www.sqlite.org/uri.html#uriimmutable: nothing is written,
            # not even the -shm file; right for a file nobody can write.
            return await cls._connect(spath, clock, busy_timeout, readonly, immutable=True)

    @classmethod
    async def _connect(
        cls, spath: str, clock: Clock, busy_timeout: float, readonly: bool, *, immutable: bool
    ) -> Self:
        uri = read_only_uri(spath, immutable=immutable) if readonly else spath
        connection = aiosqlite.connect(uri, uri=readonly, isolation_level=None)
        # Failed or cancelled (a console quit while it opened), the connection
        # is closed here: aiosqlite's thread is no daemon, and one left waiting
        # for work would keep the process from exiting after its last line.
        try:
            db = await connection
        except BaseException as exc:
            await reap(connection)
            if isinstance(exc, sqlite3.Error):
                raise map_sqlite_error(exc, spath) from exc
            raise
        ledger = cls(db, spath, clock, readonly=readonly)
        try:
            await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            await holders.register(db)
            await refuse_foreign(db, spath)  # before anything is written
            if not readonly:
                ledger._turn = open_turn(spath, busy_timeout)
            await ledger._configure()
            await ledger._migrate()
            ledger.ledger_id = await identify(db, spath, readonly=readonly)
        except BaseException as exc:
            await close_quietly(db)
            if ledger._turn is not None:
                ledger._turn.close()
            if isinstance(exc, sqlite3.Error):
                raise map_sqlite_error(exc, spath) from exc
            raise
        return ledger

    async def _configure(self) -> None:
        """The connection's durability settings, before anything is written."""
        await configure(self._db, readonly=self.readonly)

    async def _migrate(self) -> None:
        version = await self.schema_version()
        if version == SCHEMA_VERSION or self.readonly:
            if version < SCHEMA_VERSION:
                raise LedgerError(
                    f"{self.path}: ledger needs a migration: run `reclaim-tui upgrade --db"
                    f" {self.path}` as a user who may write it (--dry-run lists them)"
                )
            return
        async with self.write() as db:
            # Re-read inside the write lock: another process may have migrated.
            version = await self.schema_version()
            if not version and self.path != ":memory:":
                # A file that holds no ledger yet, where a marker says one was
                # (an empty SQLite file put in its place): never made anew.
                refuse_other_ledger(self.path, None)
            if version:
                await repair_edited(db, version)
            for number in range(version, SCHEMA_VERSION):
                for statement in migration_statements(MIGRATIONS[number]):
                    await db.execute(statement)
            await db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    async def schema_version(self) -> int:
        return await user_version(self._db)

    async def pragmas(self) -> dict[str, Any]:
        """The durability settings this connection actually runs with."""
        out: dict[str, Any] = {}
        for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys"):
            async with self._db.execute(f"PRAGMA {name}") as cur:
                row = await cur.fetchone()
            out[name] = row[0] if row else None
        return out

    async def checkpoint(self) -> None:
        """At a clean exit: copy the WAL into the ledger file and empty it, so a
        copy of the `.db` alone is the whole ledger (SQLite does it when the last
        connection closes, but not a read-only one: a console's readers close
        last). Never waits: a process still using the ledger keeps the WAL."""
        if self.readonly:
            return
        await self._drop_generation()  # a service's last write: before the WAL is emptied
        try:
            await self._db.execute("PRAGMA busy_timeout = 0")
            await self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass  # busy or failing: the WAL stays, and the ledger with it is whole

    async def close(self) -> None:
        await self._drop_generation()
        await self._db.close()
        if self._turn is not None:
            self._turn.close()

    async def interrupt(self) -> None:
        """Abort the query now running on this connection (a console scan the
        operator replaced); it takes no lock, or it would wait for that query."""
        await self._db.interrupt()

    @property
    def connection(self) -> aiosqlite.Connection:
        return self._db

    # -- transactions ----------------------------------------------------------------
    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """A `BEGIN IMMEDIATE` transaction: the write lock is taken up front, so a
        busy ledger fails here (after busy_timeout), never half-way through."""
        if self.readonly:
            raise LedgerReadOnlyError(f"{self.path}: opened read-only")
        async with self._lock:
            # LedgerBusyError past busy_timeout: nothing begun
            ticket = await self._turn.take() if self._turn is not None else 0
            try:
                await self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                moved = self._search_queued >= SEARCH_BATCH
                if moved:
                    await sqlite_writes.move_search_queue(self._db)
                await self._bump_generation()  # a service's (core/ledger/sqlite/generation.py)
                await self._db.execute("COMMIT")
                if moved:  # only once committed: a failed COMMIT moved nothing
                    self._search_queued = 0
                self._generation_committed()
            except BaseException as exc:
                # Also on cancellation: a statement already handed to
                # aiosqlite's thread runs anyway (a BEGIN cancelled while it
                # waited for the lock still opens the transaction), so queue a
                # ROLLBACK behind it instead of trusting in_transaction right
                # now, then read back whether the COMMIT went through. Both
                # are waited for whatever cancels this caller meanwhile: the
                # lock is not let go before the generation is known.
                abandon = asyncio.ensure_future(self._abandon_and_settle())
                await settled(abandon)
                if abandon.cancelled():
                    # Swept with its caller (a host's shutdown cancels every
                    # task): its ROLLBACK may still be queued for the thread,
                    # and the turn is kept until the thread has run it.
                    await self._thread_idle()
                if isinstance(exc, sqlite3.Error):
                    raise map_sqlite_error(exc, self.path) from exc
                raise
            finally:
                if self._turn is not None:
                    self._turn.let_go(ticket)

    def queued_for_search(self, rows: int) -> None:
        """Count rows queued for the text index (schema migration 9): the
        write transaction that brings the count to SEARCH_BATCH moves the
        whole queue into the index, the rows other writers queued with it."""
        self._search_queued += rows

    async def _abandon_and_settle(self) -> None:
        await self._abandon()
        await self._generation_settle()

    async def _abandon(self) -> None:
        try:
            await self._db.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass  # no transaction was open: BEGIN failed, or COMMIT went through

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._lock:
            try:
                return list(await self._db.execute_fetchall(sql, params))
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc

    async def select_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """The reads in ONE call to the connection's thread: each statement
        handed over on its own costs the event loop a hand-off and a wake-up
        (core/ledger/sqlite/aiosqlite_private.py)."""
        async with self._lock:
            try:
                return await awaited_in_thread(self._db, _select_each, self._db, statements)
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc

    async def select_then(
        self,
        statements: Sequence[tuple[str, Sequence[Any]]],
        then: Callable[[list[list[Any]]], Sequence[tuple[str, Sequence[Any]]]],
    ) -> tuple[list[list[Any]], list[list[Any]] | None]:
        """Reads, then the reads `then` makes of their answers, in ONE call
        to the connection's thread (`then` runs there: a plain function);
        the second reads' answers are None when one of them fails."""
        async with self._lock:
            try:
                return await awaited_in_thread(self._db, _select_then, self._db, statements, then)
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc

    def _claim_sql(self, where: str, free: str) -> str:
        """A claim that takes the rows it picked by their integer id (the
        table's own key), not by their key: the shared text's
        `idem IN (SELECT idem …)` looks every picked row up in the key's
        index before it reaches the row; by id the row is found directly,
        and the list the subquery builds holds integers, not keys."""
        return _CLAIM_BY_ID.format(where=text_for(where, SQLITE), free=text_for(free, SQLITE))

    async def _lease_free(self, owner: str, now: float) -> tuple[str, list[Any]]:
        """The holders provably gone are found by the claim's own statement
        (core/ledger/sqlite/holders.py): no read before it."""
        return holders.free_probed(owner, now)

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
        async with self.write() as db:
            inserted = await sqlite_writes.insert_jobs(db, jobs, actor, now)
            self.queued_for_search(len(inserted))
        present = set(inserted)
        return inserted, [idem for idem, _, _ in jobs if idem not in present]

    async def before_copy(self) -> None:
        """Before rows are written with their ids (core/ledger/transfer.py): a check
        that after_copy will be allowed (SQLite: nothing to check)."""

    async def after_copy(self) -> None:
        """After rows were written with their ids (core/ledger/transfer.py): SQLite
        numbers the next rows past the largest id by itself; the copied rows,
        queued for the text index as they went in, are moved into it."""
        async with self.write() as db:
            await sqlite_writes.move_search_queue(db)
        self._search_queued = 0

    async def sequences_behind(self) -> list[str]:
        """Id counters whose next id a row already has (SQLite: none)."""
        return []


def _select_each(
    db: aiosqlite.Connection, statements: Sequence[tuple[str, Sequence[Any]]]
) -> list[list[Any]]:
    """In the connection's thread: each statement's tuples, as aiosqlite's
    `execute_fetchall` reads one statement's."""
    conn = raw(db)
    return [conn.execute(sql, params).fetchall() for sql, params in statements]


def _select_then(
    db: aiosqlite.Connection,
    statements: Sequence[tuple[str, Sequence[Any]]],
    then: Callable[[list[list[Any]]], Sequence[tuple[str, Sequence[Any]]]],
) -> tuple[list[list[Any]], list[list[Any]] | None]:
    """In the connection's thread: the first reads' tuples, then those of
    the reads `then` makes of them (None when one of those fails)."""
    first = _select_each(db, statements)
    try:
        return first, _select_each(db, then(first))
    except sqlite3.Error:
        return first, None
