"""PostgreSQL connections for the ledger: dialling, the server's clock,
what a psycopg error means to the user, and the waits and cancellations of
one connection.

- `dial`: one autocommit connection, its keywords parsed by us
  (core/ledger/urls.py) so libpq never quotes a secret, no server-side
  prepared statements (a transaction pooler hands the next transaction to
  another server connection), booleans as 0/1 and NULs kept (pg_text.py).
- `ServerClock`: leases are written in the database server's time.
- `map_pg_error`: the LedgerError subclass a server error is, naming the
  grant a refused right needs (`noting` records the statement and role).
- `read_once`/`stop_read`: one read in its own transaction, one round
  trip (a pipeline); a read the console replaced is stopped by the server,
  never mid-protocol; `settle` rolls back what a failed pipeline left.
- `said_if_slow`: a wait behind a full pooler is logged, not silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.conninfo import make_conninfo
from psycopg.pq import PipelineStatus, TransactionStatus

from reclaim_tui.core.ledger.postgres import text as pg_text
from reclaim_tui.core.ledger.urls import pg_params, scrub
from reclaim_tui.core.ledger.urls import shown_db as redact
from reclaim_tui.errors import (
    LedgerAccessError,
    LedgerBusyError,
    LedgerConflictError,
    LedgerError,
    LedgerFullError,
    LedgerPermissionError,
    LedgerReadOnlyError,
    LedgerUnavailableError,
)

__all__ = [
    "SLOW_WAIT",
    "SYNC_EVERY",
    "ServerClock",
    "dial",
    "map_pg_error",
    "note_statement",
    "noting",
    "pipelined",
    "quote_ident",
    "read_once",
    "said_if_slow",
    "settle",
    "stop_read",
]

log = logging.getLogger("reclaim_tui.ledger")


class _PipelineEnd(logging.Filter):
    """psycopg logs (a WARNING, on stderr when nothing is configured) the
    error it met ending a pipeline whose block had already raised: after a
    lost connection, "the connection is lost" once more. The block's own
    error is the one the ledger reports (LedgerUnavailableError, waited for
    by a service, said by the console): the second is kept out of stderr
    and the JSON log, and goes to this module's log at DEBUG (--verbose)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.getMessage().startswith("error ignored terminating"):
            log.debug("psycopg: %s", record.getMessage())
            return False
        return True


logging.getLogger("psycopg").addFilter(_PipelineEnd())
#: Seconds between two readings of the server's clock.
SYNC_EVERY = 30.0


def quote_ident(name: str) -> str:
    """`name` as a PostgreSQL identifier, quoted by psycopg, as text: for a
    name said in a message or a setting's value. A statement composes its
    identifiers with `psycopg.sql` instead."""
    return sql.Identifier(name).as_string()


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


@contextmanager
def noting(text: str, conn: psycopg.AsyncConnection[Any]) -> Iterator[None]:
    """A refused right is noted with the statement and the role it was
    refused to: map_pg_error names both, and the grant it needs."""
    try:
        yield
    except pg_errors.InsufficientPrivilege as exc:
        note_statement(exc, text, conn)
        raise


def note_statement(exc: BaseException, text: str, conn: psycopg.AsyncConnection[Any]) -> None:
    """Note on `exc` (a refused right) the statement it was refused for, once."""
    if not any(n.startswith(_STATEMENT) for n in getattr(exc, "__notes__", ())):
        exc.add_note(_STATEMENT + " ".join(text.split())[:90])
        exc.add_note(_ROLE + str(conn.info.user))


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
        grant = "the ledger's owner role: it runs `reclaim-tui upgrade --db <its URL>`"
    said = f" for: {statement}" if statement else ""
    needs = f"; it needs {grant}" if grant else ""
    return f"the role {role} lacks a right{said} ({text}){needs} (docs/postgresql.md: roles)"


def _timed_out(exc: BaseException, text: str) -> bool:
    """Whether a cancelled statement ran into a server-side timeout
    (`statement_timeout`), not a cancel someone asked for (the console's
    replaced read, `pg_cancel_backend`): both are SQLSTATE 57014, told
    apart only by the server's message (English unless lc_messages says
    otherwise: then it counts as an interruption)."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None) or text
    return "statement timeout" in primary


def map_pg_error(exc: BaseException, where: str) -> LedgerError:
    """The LedgerError subclass that says what went wrong on the server."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.IntegrityError):
        return LedgerConflictError(f"{where}: the write conflicts with another row ({text})")
    if isinstance(exc, pg_errors.DiskFull):
        return LedgerFullError(f"{where}: the database server's disk is full ({text})")
    if isinstance(exc, pg_errors.QueryCanceled):
        if _timed_out(exc, text):
            return LedgerBusyError(
                f"{where}: the server cancelled the statement at the role's or database's"
                f" statement_timeout ({text}), shorter than --busy-timeout: a lock held"
                " by another process, or a slow statement; waited for and tried again as"
                " a lock is (raise statement_timeout above --busy-timeout)"
            )
        return LedgerError(f"{where}: the query was interrupted ({text})")
    if isinstance(exc, pg_errors.IdleInTransactionSessionTimeout):
        return LedgerUnavailableError(
            f"{where}: the server ended the connection at its"
            f" idle_in_transaction_session_timeout ({text}); it is dialled again"
        )
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


async def read_once(
    conn: psycopg.AsyncConnection[Any], settings: Sequence[str], text: str, params: Sequence[Any]
) -> list[Any]:
    """One read in its own transaction (`BEGIN READ ONLY` on a read-only
    ledger), its settings local to it, in one round trip; the rows are
    read once the COMMIT is back."""
    with noting(text, conn):
        async with pipelined(conn, settings):
            cur = await conn.execute(text, params)
    return await cur.fetchall() if cur.description else []


@asynccontextmanager
async def pipelined(
    conn: psycopg.AsyncConnection[Any], settings: Sequence[str]
) -> AsyncIterator[psycopg.AsyncPipeline]:
    """One transaction in one pipeline (psycopg's pipeline mode): BEGIN
    (READ ONLY on a read-only connection), `settings`, the block's
    statements and COMMIT are sent as they come and waited for once, by the
    Sync that leaves the pipeline; a statement whose result the block reads
    waits earlier (core/ledger/postgres/session.py). Not psycopg's
    `transaction()`, which syncs on entering and before COMMIT (3 round
    trips for one statement). A block that raised sends no COMMIT: what the
    failed pipeline left is rolled back (`settle`)."""
    try:
        async with conn.pipeline() as pipeline:
            await conn.execute("BEGIN READ ONLY" if conn.read_only else "BEGIN")
            for setting in settings:
                await conn.execute(setting)
            yield pipeline
            await conn.execute("COMMIT")
    except BaseException:
        await settle(conn)
        raise


async def settle(conn: psycopg.AsyncConnection[Any]) -> None:
    """Leave no transaction behind: a failed pipeline leaves its transaction
    open on the server (the statements after the error, COMMIT included, are
    skipped): roll it back (one round trip, after an error only). A
    connection left mid-protocol (a wait cancelled) is closed: the next use
    dials again."""
    if conn.closed:
        return
    status = conn.info.transaction_status
    if conn.pgconn.pipeline_status == PipelineStatus.OFF:
        if status in (TransactionStatus.IDLE, TransactionStatus.UNKNOWN):
            return
        if status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            try:
                await conn.execute("ROLLBACK")
                return
            except psycopg.Error:
                pass
    await conn.close()


async def stop_read(conn: psycopg.AsyncConnection[Any], read: asyncio.Future[list[Any]]) -> None:
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
def said_if_slow(where: str, what: str) -> Iterator[asyncio.TimerHandle]:
    """Log once, after SLOW_WAIT seconds, what the process is waiting for:
    a full pooler's wait is otherwise silent until it gives up.
    `.cancel()` the handle it gives once the wait is over."""
    handle = asyncio.get_running_loop().call_later(SLOW_WAIT, _say_waiting, where, what)
    try:
        yield handle
    finally:
        handle.cancel()


#: What libpq and the server say when a connection is refused for a reason
#: waiting does not mend (English messages; a translated one is waited for,
#: as a server not up yet is).
_FOR_GOOD = (
    ("password authentication failed", "the password was refused"),
    ("no password supplied", "the server asks for a password and none was given"),
    ("no pg_hba.conf entry", "no pg_hba.conf rule lets this host, role and database in"),
    ("pg_hba.conf rejects", "a pg_hba.conf rule rejects this host, role and database"),
    ("root certificate file", "the CA file (sslrootcert) cannot be used"),
    ("certificate file", "a TLS certificate file (sslcert) cannot be used"),
    ("private key file", "the TLS key file (sslkey) cannot be used"),
    ("certificate verify failed", "the server's TLS certificate is not trusted"),
    ("does not match host name", "the server's TLS certificate names another host"),
    ("SSL was required", "TLS is required and the server does not offer it"),
    ("does not exist", "the role or the database does not exist"),
)


def _refused_for_good(exc: psycopg.Error, where: str) -> LedgerAccessError | None:
    """A LedgerAccessError when `exc` refused the connection for good."""
    text = " ".join(str(exc).split())
    for needle, meaning in _FOR_GOOD:
        if needle in text:
            return LedgerAccessError(
                f"{where}: {meaning} ({text}); waiting would not change it: fix the"
                " connection settings (URL, PGPASSFILE or service file, sslrootcert) or ask"
                " the administrator"
            )
    return None


async def dial(url: str, busy_timeout: float, readonly: bool) -> psycopg.AsyncConnection[Any]:
    """One connection to the server `url` names, set up for the ledger."""
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
            # one that already holds a statement of that name
            # (`prepared statement "_pg3_0" already exists`).
            prepare_threshold=None,
        )
    except psycopg.Error as exc:
        mapped = _refused_for_good(exc, where) or map_pg_error(exc, where)
        raise type(mapped)(scrub(str(mapped), url)) from None
    conn.adapters.register_dumper(bool, _IntFromBool)
    pg_text.register(conn.adapters)  # a NUL stays in its row (core/ledger/postgres/text.py)
    if readonly:
        # `BEGIN READ ONLY` for every transaction (reads run in one too):
        # nothing is set on the server's session, which a pooler would
        # hand to another client.
        await conn.set_read_only(True)
    return conn
