"""The ledger on PostgreSQL: the same rows, rules and statements as on SQLite.

`--db postgresql://…` (or `RECLAIM_DB`) opens a `PgLedger` (core/ledger/opening.py).
It implements the `Ledger` port (core/ledger/port.py) beside `SqliteLedger`,
sharing `LedgerBase`: every statement of core/ledger/base.py, reads.py,
compare_and_set.py, inbox.py and console/queries.py runs in its
PostgreSQL text (core/ledger/dialect.py; PgSession,
core/ledger/postgres/session.py). The connection and its errors are
core/ledger/postgres/connect.py, the server's clock clock.py, a transaction in
one round trip pipeline.py; the schema, its numbered migrations and the
text indexes core/ledger/postgres/schema.py; a copy's identity sequences
core/ledger/postgres/copying.py. What differs is said here:

- **Driver**: psycopg 3 (async). It is the PostgreSQL project's own
  recommendation for Python, has binary wheels, pipelines `executemany`,
  cancels a running query from another task (the console's replaced filter)
  and speaks LISTEN/NOTIFY; asyncpg is faster per call but its `$1`
  placeholders and lack of a sync API would fork the ledger's SQL. One
  connection per `PgLedger`, like one SQLite connection per `Ledger`: a
  process holds one for its engine, the console two; a pool would only add
  connections that sit idle.
- **Where**: the tables live in one schema of the database the URL names,
  so a database shared with other applications is fine; `<schema>.meta`
  holds the schema version. The schema: `--schema` / `RECLAIM_PG_SCHEMA`,
  else the first schema of a search_path the connection was given
  (`options=-csearch_path=…` in the URL or keywords, or `PGOPTIONS`), else
  `reclaim_tui`. The search path becomes that schema, then the rest of the
  given path (else `public`). A schema that exists is used as it is: no
  database-level right is needed (an administrator may create it for a
  role that owns only it).
- **Claims**: `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED)`: two
  hosts claiming at once never wait for each other nor take the same row.
  Every later write is the same compare-and-set on (key, status, lease
  owner); the rows it checks are locked (`FOR UPDATE`) by the transaction.
- **Time**: leases are written in the **database server's** time. Without an
  injected clock, a `PgLedger` reads the server's clock at open and every
  `SYNC_EVERY` seconds and counts from there on the local monotonic clock:
  a host whose wall clock is wrong by an hour writes the same lease ends as
  one whose clock is right, and cannot take a row whose lease is live.
- **Durability**: a commit returns once the server has it on disk with the
  server's `synchronous_commit` (`on`, the default, is checked at open: a
  ledger refuses `off`, which may lose the last commits on a crash).
- **Restarts**: a connection lost to a server restart fails the statement
  it was running (`LedgerUnavailableError`; the transaction is rolled back
  by the server) and the next call connects again.
- **Text filter**: `ILIKE` over a trigram (pg_trgm) GIN index of the key,
  the handle and the input, kept in a table of their own off the
  transitions' path (core/ledger/postgres/job_text.py), with pg_trgm's operator class found in
  whatever schema it was installed in (Supabase: `extensions`), created if
  it may be; looked for again at each writable open while missing, and a
  missing index is said (`text_index_note`: `status`).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Self

import psycopg

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.dialect import POSTGRES, text_for
from reclaim_tui.core.ledger.owner import holder_alive
from reclaim_tui.core.ledger.postgres import writes as pg_write
from reclaim_tui.core.ledger.postgres.claims import KeyedClaims
from reclaim_tui.core.ledger.postgres.clock import ServerClock
from reclaim_tui.core.ledger.postgres.connect import dial, map_pg_error
from reclaim_tui.core.ledger.postgres.copying import SequenceCopies
from reclaim_tui.core.ledger.postgres.holders import LIVE_HOLDERS, PRUNE_HORIZONS, RENEW_SQL
from reclaim_tui.core.ledger.postgres.pipeline import (
    pipelined,
    read_once,
    said_if_slow,
    settle,
    stop_read,
)
from reclaim_tui.core.ledger.postgres.schema import migrate, schema_for, stored_version, text_index
from reclaim_tui.core.ledger.postgres.session import PgSession
from reclaim_tui.core.ledger.schema import chunks
from reclaim_tui.core.ledger.urls import shown_db as redact
from reclaim_tui.core.models import Actor, Row, Transition
from reclaim_tui.errors import LedgerError, LedgerReadOnlyError

__all__ = ["PgLedger"]

# PostgreSQL's own statements (psycopg's markers): reserve the rows of a
# JSON array of {idem, spec, model}, then write the events of those reserved.


_RESERVE_SQL = (
    "INSERT INTO jobs(idem, spec, model, status, created_at, state_since, updated_at, next_at)"
    " SELECT j.idem, j.spec, j.model, 'reserving', %s, %s, %s, %s"
    " FROM json_to_recordset(%s::json) AS j(idem text, spec text, model text)"
    ' ORDER BY j.idem COLLATE "C" ON CONFLICT (idem) DO NOTHING RETURNING idem'
)
_RESERVED_SQL = (
    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " SELECT %s, id, idem, %s, NULL, 'reserving', 'reserved' FROM jobs"
    " WHERE idem IN (SELECT value FROM json_array_elements_text(%s::json) AS _each(value))"
    " ORDER BY id"
)


class PgLedger(SequenceCopies, KeyedClaims):
    """A ledger in a PostgreSQL database (see the module's text)."""

    dialect = "postgres"
    claim_lock = " FOR UPDATE SKIP LOCKED"
    renew_sql = RENEW_SQL
    prune_before_sql: str | None = PRUNE_HORIZONS

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        url: str,
        clock: Clock,
        *,
        readonly: bool,
        busy_timeout: float,
    ) -> None:
        super().__init__(redact(url), clock, readonly=readonly)
        self._conn = conn
        self._url = url
        self._busy_timeout = busy_timeout
        #: the last read; one cancelled twice may still be rolling back
        self._reading: asyncio.Future[list[Any]] | None = None
        self.schema, self._search_path = schema_for(url)

    # -- opening -----------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        path: str,
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        readonly: bool = False,
        create: bool = True,
    ) -> Self:
        url = str(path)
        where = redact(url)
        times: Clock = clock if clock is not None else ServerClock()
        with said_if_slow(where, "opening the ledger"):
            conn = await dial(url, busy_timeout, readonly)
            ledger = cls(conn, url, times, readonly=readonly, busy_timeout=busy_timeout)
            try:
                if isinstance(times, ServerClock):
                    await times.sync(conn)
                await ledger._check_durable()
                settings = ledger._settings()
                await migrate(
                    conn,
                    schema=ledger.schema,
                    settings=settings,
                    where=where,
                    readonly=readonly,
                    create=create,
                )
                ledger.text_index_note = await text_index(
                    conn, schema=ledger.schema, settings=settings, readonly=readonly
                )
            except psycopg.Error as exc:
                await conn.close()
                raise map_pg_error(exc, where) from exc
            except BaseException:
                await conn.close()
                raise
        return ledger

    def _settings(self) -> str:
        """`_setting_list` as one command list (outside a pipeline)."""
        return "; ".join(self._setting_list())

    def _setting_list(self) -> list[str]:
        """What every transaction sets first, for itself only (`SET LOCAL`):
        session-level settings leaked through a transaction pooler to other
        clients, and were missing on the server connection the pooler gave
        this one next (`relation "jobs" does not exist`)."""
        settings = [
            # The ledger's schema first, then the path the user gave (else
            # public): a given search_path is kept, not overwritten (quoted
            # identifiers, core/ledger/postgres/schema.py schema_for).
            f"SET LOCAL search_path TO {self._search_path}",
            # busy_timeout's meaning here: how long a statement waits for a lock.
            f"SET LOCAL lock_timeout = {int(self._busy_timeout * 1000)}",
        ]
        if self.readonly:
            # The console's pages: a generic plan of a prepared page query
            # cannot see the filter text, and walked a status index over
            # every row instead of the trigram indexes. Planning each read
            # anew costs far less than such a walk.
            settings.append("SET LOCAL plan_cache_mode = force_custom_plan")
        return settings

    async def _check_durable(self) -> None:
        cur = await self._conn.execute("SHOW synchronous_commit")
        row = await cur.fetchone()
        if row and str(row[0]).lower() == "off":
            raise LedgerError(
                f"{self.path}: synchronous_commit is off, so the server may lose the last"
                " commits on a crash; a reclaim ledger needs it on (ALTER DATABASE … SET"
                " synchronous_commit = on)"
            )

    async def schema_version(self) -> int:
        async with self._lock:
            version = await self._guard(stored_version(self._conn, self.schema))
        return version or 0

    async def pragmas(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("server_version", "synchronous_commit", "transaction_isolation",
                     "lock_timeout"):  # fmt: skip
            rows = await self._fetchall(f"SHOW {name}")
            out[name] = rows[0][0] if rows else None
        return out

    # -- the connection ------------------------------------------------------------
    async def _live(self) -> psycopg.AsyncConnection[Any]:
        """The connection, connected again if a server restart broke it."""
        if self._reading is not None and not self._reading.done():
            # A read cancelled while it was being stopped: its transaction
            # ends (rolled back) before the next one begins.
            await asyncio.wait({self._reading})
        await settle(self._conn)
        if self._conn.closed or self._conn.broken:
            await self._conn.close()
            self._conn = await dial(self._url, self._busy_timeout, self.readonly)
        if isinstance(self.clock, ServerClock) and self.clock.stale:
            await self.clock.sync(self._conn)
        return self._conn

    async def _guard(self, work: Any) -> Any:
        try:
            return await work
        except psycopg.Error as exc:
            raise map_pg_error(exc, self.path) from exc

    async def close(self) -> None:
        await self._conn.close()

    async def interrupt(self) -> None:
        """Cancel the query now running (a console scan the operator replaced)."""
        if not self._conn.closed:
            await self._conn.cancel_safe()

    @property
    def connection(self) -> Any:
        return self._conn

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Any]:
        """One transaction. READ COMMITTED, as every statement written for it
        is a compare-and-set re-checked on the row it locks. In a pipeline
        (core/ledger/postgres/session.py): BEGIN, the settings and the statements
        up to the first read share one round trip, the rest share COMMIT's."""
        if self.readonly:
            raise LedgerReadOnlyError(f"{self.path}: opened read-only")
        async with self._lock:
            session: PgSession | None = None
            try:
                conn = await self._live()
                async with pipelined(conn, self._setting_list()) as pipeline:
                    session = PgSession(conn, pipeline)
                    yield session
            except psycopg.Error as exc:
                if session is not None:
                    session.attribute(exc)
                raise map_pg_error(exc, self.path) from exc
            finally:
                await settle(self._conn)  # cancelled mid-protocol: closed, dialled again

    async def _write_in(
        self,
        db: Any,
        owner: str,
        actor: Actor,
        sending: Sequence[str],
        transitions: Sequence[Transition],
        now: float,
    ) -> Callable[[], Awaitable[tuple[dict[str, Row], list[str]]]]:
        """As LedgerBase's, sent into the transaction's pipeline and read
        after its COMMIT: a group commit is one round trip
        (core/ledger/postgres/writes.py)."""
        groups = pg_write.shapes(transitions, now)
        if groups is None:
            return await super()._write_in(db, owner, actor, sending, transitions, now)
        sent = await pg_write.send(db, owner, actor, sending, groups, now)
        return functools.partial(pg_write.collect, sent, transitions)

    async def dead_holders(self, me: str) -> list[str]:
        """Owners of live-by-clock leases whose process is provably gone
        (core/ledger/postgres/holders.py: their lease horizons)."""
        rows = await self._fetchall(LIVE_HOLDERS, (me, self.clock.now()))
        return [r[0] for r in rows if holder_alive(r[0]) is False]

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        text = text_for(sql, POSTGRES)
        async with self._lock:
            try:
                conn = await self._live()
            except psycopg.Error as exc:
                raise map_pg_error(exc, self.path) from exc
            work = read_once(conn, self._setting_list(), text, params)
            read = asyncio.ensure_future(work)
            self._reading = read
            try:
                # Shielded: a reader's task is cancelled when the console
                # replaces its page; cancelling psycopg's wait mid-protocol
                # closes the connection (and its prepared plans). The server
                # is asked to stop the query instead, and the read ends.
                return await asyncio.shield(read)
            except psycopg.Error as exc:
                raise map_pg_error(exc, self.path) from exc
            except asyncio.CancelledError:
                if not read.done():
                    await stop_read(conn, read)
                raise

    # -- statements that differ --------------------------------------------------------
    async def insert_jobs(
        self, jobs: Sequence[tuple[str, str, str]], actor: str
    ) -> tuple[list[str], list[str]]:
        """As Ledger.insert_jobs; `ON CONFLICT DO NOTHING` decides what is new,
        so two hosts reserving the same key at once both succeed, one inserts."""
        now = self.clock.now()
        fresh: set[str] = set()
        # In key order: two hosts inserting overlapping keys wait for each
        # other's unique-index entries in one order, never in a cycle (in
        # their own orders they deadlocked; tests/unit/test_pg_ledger.py).
        ordered = sorted(jobs)
        async with self.write() as db:
            for chunk in chunks(ordered, 5000):
                async with db.execute(
                    _RESERVE_SQL,
                    (
                        now,
                        now,
                        now,
                        now,
                        json.dumps([{"idem": i, "spec": s, "model": m} for i, s, m in chunk]),
                    ),
                ) as cur:
                    fresh.update(r[0] for r in await cur.fetchall())
            inserted = list(dict.fromkeys(idem for idem, _, _ in jobs if idem in fresh))
            for chunk in chunks(sorted(fresh), 5000):
                await db.execute(
                    _RESERVED_SQL,
                    (now, actor, json.dumps(list(chunk))),
                )
        present = set(inserted)
        return inserted, [idem for idem, _, _ in jobs if idem not in present]
