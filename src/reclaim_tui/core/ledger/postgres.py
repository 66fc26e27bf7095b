"""The ledger on PostgreSQL: the same rows, rules and statements as on SQLite.

`--db postgresql://…` (or `RECLAIM_DB`) opens a `PgLedger`. It is a `Ledger`:
every statement of core/ledger/base.py, core/ledger/compare_and_set.py, core/ledger/inbox.py
and core/ledger/queries.py runs unchanged, rewritten for the server by
core/ledger/pg_sql.py. What differs is said here:

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
- **Text filter**: `ILIKE` over trigram (pg_trgm) GIN indexes of the key,
  the handle and the input, with pg_trgm's operator classes found in
  whatever schema it was installed in (Supabase: `extensions`), created if
  it may be; looked for again at each writable open while missing, and a
  missing index is said (`text_index_note`: `status`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Dumper
from psycopg.conninfo import make_conninfo
from psycopg.pq import TransactionStatus

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import pg_text
from reclaim_tui.core.ledger.base import Ledger
from reclaim_tui.core.ledger.pg_sql import reorder, to_postgres
from reclaim_tui.core.ledger.schema import chunks
from reclaim_tui.core.ledger.sqlite import pg_params, scrub
from reclaim_tui.core.ledger.sqlite import shown_db as redact
from reclaim_tui.errors import (
    LedgerBusyError,
    LedgerConflictError,
    LedgerError,
    LedgerForeignError,
    LedgerFullError,
    LedgerPermissionError,
    LedgerReadOnlyError,
    LedgerUnavailableError,
    LedgerVersionError,
)

__all__ = [
    "PG_MIGRATIONS",
    "PG_SCHEMA",
    "PG_SCHEMA_VERSION",
    "PgLedger",
    "ServerClock",
]

PG_SCHEMA = "reclaim_tui"
log = logging.getLogger("reclaim_tui.ledger")
#: The environment variable (and `--schema`) naming the ledger's schema.
SCHEMA_ENV = "RECLAIM_PG_SCHEMA"
#: Seconds between two readings of the server's clock.
SYNC_EVERY = 30.0

_REAL = "DOUBLE PRECISION"
# Byte order, as SQLite compares: the same keyset pages; and ASCII-only case
# folding in the filter's ILIKE (as SQLite's LIKE) whatever the database's
# locale. reclaim_input(spec) takes the collation of spec.
_TEXT = 'TEXT COLLATE "C"'

# Numbered migrations of the PostgreSQL schema. Migration 1 is the SQLite
# schema as of its migration 5 (core/ledger/schema.py) in PostgreSQL's types; the
# text index is pg_trgm (PG_TEXT_INDEX), created apart because the extension
# may be refused.
PG_MIGRATIONS: tuple[str, ...] = (
    f"""
    CREATE TABLE jobs (
        id             BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        idem           {_TEXT} NOT NULL UNIQUE,
        spec           {_TEXT} NOT NULL,
        model          {_TEXT} NOT NULL,
        status         {_TEXT} NOT NULL CHECK (status IN
                         ('reserving','submitted','done','consumed','failed','cancelled')),
        handle         {_TEXT} UNIQUE,
        attempts       INTEGER NOT NULL DEFAULT 0,
        polls          INTEGER NOT NULL DEFAULT 0,
        inflight       INTEGER NOT NULL DEFAULT 0,
        held           INTEGER NOT NULL DEFAULT 0,
        duplicates     INTEGER NOT NULL DEFAULT 0,
        error_streak   INTEGER NOT NULL DEFAULT 0,
        lease_owner    {_TEXT},
        lease_until    {_REAL} NOT NULL DEFAULT 0,
        next_at        {_REAL} NOT NULL DEFAULT 0,
        last_error     {_TEXT},
        created_at     {_REAL} NOT NULL,
        state_since    {_REAL} NOT NULL,
        submitted_at   {_REAL},
        done_at        {_REAL},
        consumed_at    {_REAL},
        updated_at     {_REAL} NOT NULL,
        prev_owner     {_TEXT},
        sent_at        {_REAL},
        outside_streak INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX jobs_due ON jobs(status, next_at);
    CREATE INDEX jobs_status_age ON jobs(status, state_since, idem);
    CREATE INDEX jobs_updated ON jobs(updated_at, idem);
    CREATE INDEX jobs_leased ON jobs(lease_owner) WHERE lease_owner IS NOT NULL;
    CREATE TABLE results (
        job            BIGINT PRIMARY KEY REFERENCES jobs(id),
        idem           {_TEXT} NOT NULL,
        interaction_id TEXT NOT NULL,
        output_text    TEXT NOT NULL,
        usage          TEXT,
        raw_json       TEXT NOT NULL,
        stored_at      {_REAL} NOT NULL
    );
    CREATE TABLE events (
        id          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        at          {_REAL} NOT NULL,
        job         BIGINT NOT NULL REFERENCES jobs(id),
        idem        {_TEXT} NOT NULL,
        actor       TEXT NOT NULL,
        from_status TEXT,
        to_status   TEXT,
        note        TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX events_job ON events(job, id);
    CREATE TABLE inbox (
        webhook_id  {_TEXT} PRIMARY KEY,
        received_at {_REAL} NOT NULL,
        type        TEXT NOT NULL,
        interaction {_TEXT},
        job         {_TEXT},
        api_status  TEXT,
        signed_by   TEXT NOT NULL
    );
    CREATE INDEX inbox_interaction ON inbox(interaction);
    CREATE INDEX inbox_job ON inbox(job) WHERE job IS NOT NULL;
    CREATE INDEX inbox_received ON inbox(received_at);
    CREATE TABLE inbox_counters (
        name       {_TEXT} PRIMARY KEY,
        value      INTEGER NOT NULL,
        updated_at {_REAL} NOT NULL
    );
    -- PARALLEL UNSAFE: the EXCEPTION block is a subtransaction, which no
    -- process may start while a query runs in parallel mode, leader included
    -- (a parallel scan of 1M rows failed; RESTRICTED fails the same way).
    CREATE FUNCTION reclaim_input(spec TEXT) RETURNS TEXT
        LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $fn$
    BEGIN
        RETURN spec::json ->> 'input';
    EXCEPTION WHEN others THEN
        RETURN NULL;  -- a hand-edited spec that is not JSON: no input to search
    END
    $fn$
    """,
    # 2: migration 1 was edited after it shipped, and the ledgers the earlier
    # texts made say "schema 1" too (issue 23; tests/fixtures/ledgers/):
    # c5afcac made spec and last_error in the database's collation (a UTF-8
    # locale's ILIKE matched CAFÉ for café), and c5afcac and 00de11f declared
    # reclaim_input PARALLEL SAFE (a parallel scan failed: "cannot start
    # subtransactions during a parallel operation"). Brings any of them to
    # migration 1's text as it is now; on a ledger that text made, it changes
    # nothing. The collation change rebuilds the indexes on spec.
    """
    ALTER TABLE jobs ALTER COLUMN spec TYPE TEXT COLLATE "C",
        ALTER COLUMN last_error TYPE TEXT COLLATE "C";
    CREATE OR REPLACE FUNCTION reclaim_input(spec TEXT) RETURNS TEXT
        LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $fn$
    BEGIN
        RETURN spec::json ->> 'input';
    EXCEPTION WHEN others THEN
        RETURN NULL;  -- a hand-edited spec that is not JSON: no input to search
    END
    $fn$
    """,
)
PG_SCHEMA_VERSION = len(PG_MIGRATIONS)
#: The console filter's indexes (any substring of 3+ characters, `ILIKE`);
#: `{ops}` is pg_trgm's operator class, qualified by the extension's schema.
PG_TEXT_INDEX = (
    "CREATE INDEX IF NOT EXISTS jobs_idem_trgm ON jobs USING gin (idem {ops})",
    "CREATE INDEX IF NOT EXISTS jobs_handle_trgm ON jobs USING gin (handle {ops})",
    "CREATE INDEX IF NOT EXISTS jobs_input_trgm ON jobs USING gin (reclaim_input(spec) {ops})",
)
PG_TEXT_INDEX_NAMES = ("jobs_idem_trgm", "jobs_handle_trgm", "jobs_input_trgm")


def quote_ident(name: str) -> str:
    """`name` as a PostgreSQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def _given_search_path(params: dict[str, str]) -> str | None:
    r"""The search_path a connection is given by its `options` keyword or
    `PGOPTIONS` (`-c search_path=…`, `-csearch_path=…`, `--search_path=…`;
    `\ ` is a blank inside a word); the keyword's wins, as in libpq."""
    for options in (params.get("options"), os.environ.get("PGOPTIONS")):
        words = re.findall(r"(?:\\.|\S)+", options or "")
        words = [re.sub(r"\\(.)", r"\1", w) for w in words]
        found = None
        for i, word in enumerate(words):
            if word == "-c" and i + 1 < len(words):
                word = "-c" + words[i + 1]
            m = re.fullmatch(r"(?:-c|--)search[_-]path=(.*)", word, re.S)
            if m:
                found = m.group(1)
        if found is not None:
            return found
    return None


def _split_path(path: str) -> list[str]:
    """A search_path's entries, unquoted (`a, "B c"` → [a, B c])."""
    entries = []
    for m in re.finditer(r'\s*("(?:[^"]|"")*"|[^,]*)\s*(?:,|$)', path):
        item = m.group(1).strip()
        if item.startswith('"'):
            entries.append(item[1:-1].replace('""', '"'))
        elif item:
            entries.append(item.lower())
    return entries


def schema_for(url: str) -> tuple[str, str]:
    """The ledger's schema and the search path its connections use (see the
    module's text: `--schema`/RECLAIM_PG_SCHEMA, the given search_path,
    `reclaim_tui`)."""
    given = _given_search_path(pg_params(url))
    entries = _split_path(given or "")
    named = [e for e in entries if e != "$user"]
    schema = os.environ.get(SCHEMA_ENV) or (named[0] if named else PG_SCHEMA)
    rest = [e for e in entries if e != schema] if given is not None else ["public"]
    return schema, ", ".join(quote_ident(e) for e in [schema, *rest])


_MIGRATION_LOCK = 0x7265636C61696D  # "reclaim": one migrating process at a time


class ServerClock:
    """The database server's time, counted locally on the monotonic clock
    between readings (one `SELECT` every SYNC_EVERY seconds). The host's
    wall clock is never read."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._server = 0.0
        self._at = -float("inf")

    def now(self) -> float:
        return self._server + (self._monotonic() - self._at)

    @property
    def stale(self) -> bool:
        return self._monotonic() - self._at >= SYNC_EVERY

    async def sync(self, conn: psycopg.AsyncConnection[Any]) -> None:
        sent = self._monotonic()
        cur = await conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
        row = await cur.fetchone()
        back = self._monotonic()
        assert row is not None
        # The server read its clock somewhere in the round trip: its middle.
        self._server, self._at = float(row[0]), (sent + back) / 2


class _IntFromBool(Dumper):
    """Python bools go into the ledger's INTEGER flags (0/1), as in SQLite."""

    oid = psycopg.postgres.types["int4"].oid

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _Cursor:
    """The part of an aiosqlite cursor the ledger's statements use."""

    def __init__(self, cur: psycopg.AsyncCursor[Any]) -> None:
        self._cur = cur
        self.rowcount = cur.rowcount

    async def fetchall(self) -> list[Any]:
        return await self._cur.fetchall() if self._cur.description else []

    async def fetchone(self) -> Any:
        return await self._cur.fetchone() if self._cur.description else None


class _Run:
    """`await session.execute(…)` and `async with session.execute(…) as cur`."""

    def __init__(self, run: Any) -> None:
        self._run = run

    def __await__(self) -> Any:
        return self._run.__await__()

    async def __aenter__(self) -> _Cursor:
        cursor: _Cursor = await self._run
        return cursor

    async def __aexit__(self, *exc: object) -> None:
        return None


class PgSession:
    """A transaction's statements, in the aiosqlite connection's shape the
    ledger's SQL modules are written against."""

    dialect = "postgres"
    #: Appended to a SELECT of rows a compare-and-set is about to write.
    row_lock = " FOR UPDATE"

    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Run:
        return _Run(self._execute(sql, params))

    async def _execute(self, sql: str, params: Sequence[Any]) -> _Cursor:
        text, order = to_postgres(sql)
        cur = self._conn.cursor()
        with _noting(text, self._conn):
            await cur.execute(text, reorder(params, order))
        return _Cursor(cur)

    async def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> _Cursor:
        text, order = to_postgres(sql)
        cur = self._conn.cursor()
        if seq:
            with _noting(text, self._conn):
                await cur.executemany(text, [reorder(p, order) for p in seq])
        return _Cursor(cur)  # rowcount: the rows all of them changed


@contextmanager
def _noting(sql: str, conn: psycopg.AsyncConnection[Any]) -> Iterator[None]:
    """A refused right is noted with the statement and the role it was
    refused to: map_pg_error names both, and the grant it needs."""
    try:
        yield
    except pg_errors.InsufficientPrivilege as exc:
        if not any(n.startswith(_STATEMENT) for n in getattr(exc, "__notes__", ())):
            exc.add_note(_STATEMENT + " ".join(sql.split())[:90])
            exc.add_note(_ROLE + str(conn.info.user))
        raise


_STATEMENT, _ROLE = "reclaim statement: ", "reclaim role: "


def _grant_needed(exc: BaseException, text: str) -> str:
    """What the error `text` of a refused right asks an administrator for."""
    notes = getattr(exc, "__notes__", ())
    statement = next((n[len(_STATEMENT) :] for n in notes if n.startswith(_STATEMENT)), "")
    role = next((n[len(_ROLE) :] for n in notes if n.startswith(_ROLE)), "") or "<role>"
    role = quote_ident(role)
    m = re.search(r"permission denied for (table|sequence|schema|database|function) (\S+)", text)
    kind, name = (m.group(1), m.group(2).strip('"')) if m else ("", "")
    grant = {
        "table": f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE {name} TO {role}",
        "sequence": f"GRANT USAGE, UPDATE ON SEQUENCE {name} TO {role}",
        "schema": f"GRANT USAGE ON SCHEMA {name} TO {role} (and CREATE, to create the ledger)",
        "database": f"an administrator's CREATE SCHEMA <schema> AUTHORIZATION {role}"
        " (a ledger whose schema exists needs no right on the database)",
        "function": f"GRANT EXECUTE ON FUNCTION {name} TO {role}",
    }.get(kind, "")
    if "must be owner" in text:
        grant = "the ledger's owner role: run this command (or any writable one) as it once"
    said = f" for: {statement}" if statement else ""
    needs = f"; it needs {grant}" if grant else ""
    return f"the role {role} lacks a right{said} ({text}){needs} (README: PostgreSQL, roles)"


def map_pg_error(exc: BaseException, where: str) -> LedgerError:
    """The LedgerError subclass that says what went wrong on the server."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.IntegrityError):
        return LedgerConflictError(f"{where}: the write conflicts with another row ({text})")
    if isinstance(exc, pg_errors.DiskFull):
        return LedgerFullError(f"{where}: the database server's disk is full ({text})")
    if isinstance(exc, pg_errors.QueryCanceled):
        return LedgerError(f"{where}: the query was interrupted ({text})")
    if isinstance(exc, (pg_errors.LockNotAvailable, pg_errors.DeadlockDetected)) or isinstance(
        exc, pg_errors.SerializationFailure
    ):
        return LedgerBusyError(f"{where}: rows stayed locked by another process ({text})")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return LedgerPermissionError(f"{where}: {_grant_needed(exc, text)}")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return LedgerReadOnlyError(f"{where}: the ledger cannot be written ({text})")
    if isinstance(exc, (pg_errors.DuplicatePreparedStatement, pg_errors.InvalidSqlStatementName)):
        # A pooler's server connection that another client left a prepared
        # statement on (or took its own away): the connection, not the ledger.
        return LedgerUnavailableError(
            f"{where}: the server connection the pooler gave is not usable now ({text})"
        )
    if "query_wait_timeout" in text:
        return LedgerUnavailableError(
            f"{where}: the pooler found no free server connection within its"
            f" query_wait_timeout ({text}): its pool is full, every server connection held"
            " by other clients (session mode holds one per client: raise the pool size,"
            " or use pool_mode=transaction)"
        )
    if isinstance(exc, psycopg.OperationalError):
        return LedgerUnavailableError(f"{where}: the database server cannot be used now ({text})")
    return LedgerError(f"{where}: {text}")


async def _read(
    conn: psycopg.AsyncConnection[Any], settings: str, text: str, params: Sequence[Any]
) -> list[Any]:
    """One read in its own transaction (`BEGIN READ ONLY` on a read-only
    ledger), its settings local to it."""
    async with conn.transaction():
        await conn.execute(settings)
        with _noting(text, conn):
            cur = await conn.execute(text, params)
        return await cur.fetchall() if cur.description else []


async def _stop(conn: psycopg.AsyncConnection[Any], read: asyncio.Future[list[Any]]) -> None:
    """Ask the server to cancel `read`'s query and wait for it to end. The
    asking runs on in its own task if the caller is cancelled again (Textual
    cancels a worker that is still cleaning up): the query still stops, and
    psycopg's own lock keeps the next statement behind it."""

    async def cancel() -> None:
        try:
            await conn.cancel_safe(timeout=2.0)
        except psycopg.Error:
            pass
        await asyncio.wait({read}, timeout=5.0)
        if read.done() and not read.cancelled():
            read.exception()  # retrieved: a QueryCanceled nobody waits for

    stopping = asyncio.ensure_future(cancel())
    _STOPPING.add(stopping)
    stopping.add_done_callback(_STOPPING.discard)
    try:
        await asyncio.shield(stopping)
    except asyncio.CancelledError:
        pass


#: Cancellations under way (a task nobody awaits must be referenced somewhere).
_STOPPING: set[asyncio.Future[None]] = set()


#: Seconds a connection or a write may wait before the wait is said (logged).
SLOW_WAIT = 5.0


def _say_waiting(where: str, what: str) -> None:
    log.warning(
        "%s: still waiting after %.0f s for the database server (%s): behind a pooler"
        " (PgBouncer) this is a full pool, every server connection held by other clients"
        " (it waits up to its query_wait_timeout, 120 s by default); else a lock another"
        " process holds, or a server that does not answer",
        where,
        SLOW_WAIT,
        what,
    )


@contextlib.contextmanager
def _said_if_slow(where: str, what: str) -> Iterator[asyncio.TimerHandle]:
    """Log once, after SLOW_WAIT seconds, what the process is waiting for:
    a full pooler's wait is otherwise silent until it gives up (issue 23).
    `.cancel()` the handle it gives once the wait is over."""
    handle = asyncio.get_running_loop().call_later(SLOW_WAIT, _say_waiting, where, what)
    try:
        yield handle
    finally:
        handle.cancel()


class PgLedger(Ledger):
    """A ledger in a PostgreSQL database (see the module's text)."""

    dialect = "postgres"
    claim_lock = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        conn: psycopg.AsyncConnection[Any],
        url: str,
        clock: Clock,
        *,
        readonly: bool,
        busy_timeout: float,
    ) -> None:
        super().__init__(None, redact(url), clock, readonly=readonly)  # type: ignore[arg-type]
        self._conn = conn
        self._url = url
        self._busy_timeout = busy_timeout
        #: the last read; one cancelled twice may still be rolling back
        self._reading: asyncio.Future[list[Any]] | None = None
        self.schema, self._search_path = schema_for(url)
        self._q = quote_ident(self.schema)
        #: Why the console filter has no trigram index (None: it has them).
        self.text_index_note: str | None = None

    # -- opening -----------------------------------------------------------------
    @classmethod
    async def open(  # type: ignore[override]
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
        with _said_if_slow(where, "opening the ledger"):
            conn = await cls._dial(url, busy_timeout, readonly)
            ledger = cls(conn, url, times, readonly=readonly, busy_timeout=busy_timeout)
            try:
                if isinstance(times, ServerClock):
                    await times.sync(conn)
                await ledger._check_durable()
                await ledger._migrate_pg(create)
                await ledger._text_index()
            except psycopg.Error as exc:
                await conn.close()
                raise map_pg_error(exc, where) from exc
            except BaseException:
                await conn.close()
                raise
        return ledger

    @staticmethod
    async def _dial(url: str, busy_timeout: float, readonly: bool) -> psycopg.AsyncConnection[Any]:
        where = redact(url)
        try:
            # Keywords parsed by us, quoted by psycopg: libpq never parses
            # (nor quotes in an error) the text the user gave.
            conninfo = make_conninfo("", **pg_params(url))
            conn = await psycopg.AsyncConnection.connect(
                conninfo,
                autocommit=True,
                connect_timeout=max(2, int(busy_timeout)),
                application_name="reclaim-tui",
                # No server-side prepared statements: behind a transaction
                # pooler (PgBouncer, the endpoint of most managed services)
                # the next transaction may run on another server connection,
                # one that already holds a statement of that name (issue 23:
                # `prepared statement "_pg3_0" already exists`).
                prepare_threshold=None,
            )
        except psycopg.Error as exc:
            mapped = map_pg_error(exc, where)
            raise type(mapped)(scrub(str(mapped), url)) from None
        conn.adapters.register_dumper(bool, _IntFromBool)
        pg_text.register(conn.adapters)  # a NUL stays in its row (core/ledger/pg_text.py)
        if readonly:
            # `BEGIN READ ONLY` for every transaction (reads run in one too):
            # nothing is set on the server's session, which a pooler would
            # hand to another client.
            await conn.set_read_only(True)
        return conn

    def _settings(self) -> str:
        """What every transaction sets first, for itself only (`SET LOCAL`):
        session-level settings leaked through a transaction pooler to other
        clients, and were missing on the server connection the pooler gave
        this one next (issue 23: `relation "jobs" does not exist`)."""
        settings = [
            # The ledger's schema first, then the path the user gave (else
            # public): a given search_path is kept, not overwritten (quoted
            # identifiers, core/ledger/postgres.py schema_for).
            f"SET LOCAL search_path TO {self._search_path}",
            # busy_timeout's meaning here: how long a statement waits for a lock.
            f"SET LOCAL lock_timeout = {int(self._busy_timeout * 1000)}",
        ]
        if self.readonly:
            # The console's pages: a generic plan of a prepared page query
            # cannot see the filter text, and walked a status index over
            # 1M rows (6-10 s) instead of the trigram indexes (12-23 ms).
            # Planning each read anew costs 1-8 ms.
            settings.append("SET LOCAL plan_cache_mode = force_custom_plan")
        return "; ".join(settings)

    async def _check_durable(self) -> None:
        cur = await self._conn.execute("SHOW synchronous_commit")
        row = await cur.fetchone()
        if row and str(row[0]).lower() == "off":
            raise LedgerError(
                f"{self.path}: synchronous_commit is off, so the server may lose the last"
                " commits on a crash; a reclaim ledger needs it on (ALTER DATABASE … SET"
                " synchronous_commit = on)"
            )

    async def _stored_version(self) -> int | None:
        """The schema version, 0 for no reclaim_tui schema; None for a schema
        of that name that is not a ledger's."""
        # pg_tables, not information_schema: that lists only the tables the
        # role has a right on, and a role granted some would see a stranger.
        cur = await self._conn.execute(
            "SELECT count(*) FILTER (WHERE tablename = 'meta'), count(*)"
            " FROM pg_tables WHERE schemaname = %s",
            (self.schema,),
        )
        row = await cur.fetchone()
        assert row is not None
        has_meta, tables = int(row[0]), int(row[1])
        if not has_meta:
            return 0 if tables == 0 else None
        sql = f"SELECT value FROM {self._q}.meta WHERE key = 'schema'"
        with _noting(sql, self._conn):
            cur = await self._conn.execute(sql)
        found = await cur.fetchone()
        return int(found[0]) if found else None

    async def _migrate_pg(self, create: bool) -> None:
        version = await self._stored_version()
        if version is None:
            raise LedgerForeignError(
                f"{self.path}: the schema {self._q} holds tables that are not a reclaim-tui"
                " ledger; refusing to touch it — choose another database"
            )
        if version > PG_SCHEMA_VERSION:
            raise LedgerVersionError(
                f"{self.path}: written by a newer reclaim-tui (schema {version}, this version"
                f" knows up to {PG_SCHEMA_VERSION}); upgrade reclaim-tui to open it"
            )
        if version == PG_SCHEMA_VERSION:
            return
        if version == 0 and not create:
            raise LedgerError(f"{self.path}: no ledger here (run `tick` or `submit` first)")
        if self.readonly:
            raise LedgerError(f"{self.path}: ledger needs a migration; open it writable once")
        async with self._conn.transaction():
            await self._conn.execute(self._settings())
            await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            version = await self._stored_version()  # another process may have migrated
            if version is None or version >= PG_SCHEMA_VERSION:
                return
            if version == 0:
                # Looked for first: CREATE SCHEMA IF NOT EXISTS checks the
                # database's CREATE right even when the schema exists, and a
                # role that owns only its schema has none.
                cur = await self._conn.execute(
                    "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
                )
                if await cur.fetchone() is None:
                    await self._exec(f"CREATE SCHEMA {self._q}")
                await self._exec(
                    f"CREATE TABLE {self._q}.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
                )
                await self._exec(f"INSERT INTO {self._q}.meta VALUES ('schema', '0')")
            for number in range(version, PG_SCHEMA_VERSION):
                await self._exec(PG_MIGRATIONS[number])
            await self._exec(
                f"UPDATE {self._q}.meta SET value = %s WHERE key = 'schema'",
                (str(PG_SCHEMA_VERSION),),
            )

    async def _exec(self, sql: str, params: Sequence[Any] = ()) -> None:
        with _noting(sql, self._conn):
            await self._conn.execute(sql, params)

    async def _text_index(self) -> None:
        """pg_trgm's indexes, wherever the extension lives (an administrator
        may have installed it in another schema: Supabase's `extensions`),
        created if it may be (a trusted extension: a database owner may).
        Looked for at every open while missing; without them the filter
        still works, by reading the rows, and `text_index_note` says why."""
        present = await self._conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = %s AND indexname = ANY(%s)",
            (self.schema, list(PG_TEXT_INDEX_NAMES)),
        )
        row = await present.fetchone()
        if row is not None and int(row[0]) == len(PG_TEXT_INDEX_NAMES):
            self.text_index_note = None
            return
        where: str | None = None
        if self.readonly:
            where = await self._trgm_schema()
            usable = where is not None and await self._may_use(where)
            reason = "pg_trgm is there; a writable open creates them" if usable else ""
            self.text_index_note = self._no_index(reason, where)
            return
        try:
            async with self._conn.transaction():  # a savepoint: a refusal undoes only this
                await self._conn.execute(self._settings())
                await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                where = await self._trgm_schema()
                if where is None:
                    await self._conn.execute(
                        f"CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA {self._q}"
                    )
                    where = self.schema
                ops = f"{quote_ident(where)}.gin_trgm_ops"
                for statement in PG_TEXT_INDEX:
                    await self._conn.execute(statement.format(ops=ops))
            self.text_index_note = None
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            self.text_index_note = self._no_index(reason, where)

    def _no_index(self, reason: str, where: str | None) -> str:
        """What `status` says of missing text indexes: why, and the remedy."""
        role = quote_ident(str(self._conn.info.user))
        if reason.startswith("pg_trgm is there"):
            fix = reason
        elif where is not None:
            fix = f"{reason}; " if reason else ""
            fix += f"an administrator may GRANT USAGE ON SCHEMA {quote_ident(where)} TO {role}"
        else:
            fix = f"{reason}; " if reason else ""
            fix += "an administrator may CREATE EXTENSION pg_trgm (any schema), GRANT USAGE on it"
        return (
            f"no trigram index for the text filter ({fix}; the ledger's owner creates them at"
            " its next writable open): the filter reads every row"
        )

    async def _may_use(self, schema: str) -> bool:
        cur = await self._conn.execute("SELECT has_schema_privilege(%s, 'USAGE')", (schema,))
        row = await cur.fetchone()
        return bool(row and row[0])

    async def _trgm_schema(self) -> str | None:
        """The schema pg_trgm is installed in, None where it is not."""
        cur = await self._conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n"
            " ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'"
        )
        row = await cur.fetchone()
        return str(row[0]) if row else None

    async def schema_version(self) -> int:
        async with self._lock:
            version = await self._guard(self._stored_version())
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
        if self._conn.closed or self._conn.broken:
            await self._conn.close()
            self._conn = await self._dial(self._url, self._busy_timeout, self.readonly)
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
        is a compare-and-set re-checked on the row it locks."""
        if self.readonly:
            raise LedgerReadOnlyError(f"{self.path}: opened read-only")
        async with self._lock:
            try:
                conn = await self._live()
                async with conn.transaction():
                    await conn.execute(self._settings())
                    yield PgSession(conn)
            except psycopg.Error as exc:
                raise map_pg_error(exc, self.path) from exc
            finally:
                # A cancellation mid-statement may leave the protocol mid-way:
                # drop the connection (the server rolls back) and dial again.
                status = self._conn.info.transaction_status
                if not self._conn.closed and status not in (
                    TransactionStatus.IDLE,
                    TransactionStatus.UNKNOWN,
                ):
                    await self._conn.close()

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        text, order = to_postgres(sql)
        async with self._lock:
            try:
                conn = await self._live()
            except psycopg.Error as exc:
                raise map_pg_error(exc, self.path) from exc
            work = _read(conn, self._settings(), text, reorder(params, order))
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
                    await _stop(conn, read)
                raise

    # -- statements that differ --------------------------------------------------------
    async def before_copy(self) -> None:
        """A copy moves the identity sequences past the copied ids
        (after_copy), which needs UPDATE on them: refused up front, naming
        the grant, rather than after every row was copied."""
        role = quote_ident(str(self._conn.info.user))
        for table in ("jobs", "events"):
            qualified = f"{self._q}.{table}"
            rows = await self._fetchall(
                "SELECT pg_get_serial_sequence(?, 'id'),"
                " has_sequence_privilege(pg_get_serial_sequence(?, 'id'), 'UPDATE')",
                (qualified, qualified),
            )
            sequence, allowed = rows[0]
            if not allowed:
                raise LedgerPermissionError(
                    f"{self.path}: migrate moves the sequence {sequence} past the copied ids"
                    f" (setval), and the role {role} may not; nothing was copied. It needs"
                    f" GRANT UPDATE ON SEQUENCE {sequence} TO {role} (or run migrate as the"
                    " ledger's owner role)"
                )

    async def after_copy(self) -> None:
        """Rows copied with their ids (core/ledger/transfer.py) leave the identity
        sequences behind: move them past the largest id, or the next insert
        would reuse a copied id."""
        async with self.write() as db:
            for table in ("jobs", "events"):
                await db.execute(
                    "SELECT setval(pg_get_serial_sequence(?, 'id'),"
                    f" (SELECT COALESCE(MAX(id), 0) + 1 FROM {self._q}.{table}), false)",
                    (f"{self._q}.{table}",),
                )

    async def sequences_behind(self) -> list[str]:
        """The identity sequences whose next id is one a row already has
        (a copy whose setval did not happen): the next insert would fail."""
        behind = []
        for table in ("jobs", "events"):
            qualified = f"{self._q}.{table}"
            rows = await self._fetchall(
                f"SELECT pg_get_serial_sequence(?, 'id'), (SELECT MAX(id) FROM {qualified})",
                (qualified,),
            )
            sequence, largest = rows[0]
            state = await self._fetchall(f"SELECT last_value, is_called FROM {sequence}")
            last = int(state[0][0]) - (0 if state[0][1] else 1)
            if largest is not None and last < largest:
                behind.append(
                    f"{sequence}: next id {last + 1}, but {table} holds ids up to"
                    f" {largest} (run migrate again with UPDATE on it, or as the owner role)"
                )
        return behind

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
                    "INSERT INTO jobs(idem, spec, model, status, created_at, state_since,"
                    " updated_at, next_at) SELECT j.idem, j.spec, j.model, 'reserving', ?, ?, ?, ?"
                    " FROM json_to_recordset(?::json) AS j(idem text, spec text, model text)"
                    ' ORDER BY j.idem COLLATE "C" ON CONFLICT (idem) DO NOTHING RETURNING idem',
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
                    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
                    " SELECT ?, id, idem, ?, NULL, 'reserving', 'reserved' FROM jobs"
                    " WHERE idem IN (SELECT value FROM json_each(?)) ORDER BY id",
                    (now, actor, json.dumps(list(chunk))),
                )
        present = set(inserted)
        return inserted, [idem for idem, _, _ in jobs if idem not in present]
