"""PostgreSQL connections for the ledger: dialling, and what a psycopg error
means to the user.

- `dial`: one autocommit connection, its keywords parsed by us
  (core/ledger/urls.py) so libpq never quotes a secret, no server-side
  prepared statements (a transaction pooler hands the next transaction to
  another server connection), booleans as 0/1 and NULs kept (text.py); a
  connection refused for good (a password, a pg_hba rule) says so.
- `map_pg_error`: the LedgerError subclass a server error is, naming the
  grant a refused right needs (`noting` records the statement and role).

The server's clock is core/ledger/postgres/clock.py; a transaction in one
round trip, its waits and cancellations core/ledger/postgres/pipeline.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.conninfo import make_conninfo

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

__all__ = ["dial", "map_pg_error", "note_statement", "noting", "quote_ident"]


def quote_ident(name: str) -> str:
    """`name` as a PostgreSQL identifier, quoted by psycopg, as text: for a
    name said in a message or a setting's value. A statement composes its
    identifiers with `psycopg.sql` instead."""
    return sql.Identifier(name).as_string()


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


#: A prepare threshold no statement reaches by being run again: on a direct
#: connection only the statements asked for (PgSession.send) are prepared.
ASKED_ONLY = 1 << 30


async def _direct(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether `conn` is the server's own session, not a pooler's client.

    A pooler hands a client a process id and cancel key of its own (it may
    run the client's transactions on any of its server connections), so the
    server's `pg_backend_pid()` is not the one the connection was given.
    Server-side prepared statements are only safe on the server's own
    session: behind a transaction pooler the next transaction may run on a
    server connection that never saw the statement, or holds another of
    its name (`prepared statement "_pg3_0" already exists`)."""
    cur = await conn.execute("SELECT pg_backend_pid()")
    row = await cur.fetchone()
    return row is not None and int(row[0]) == conn.info.backend_pid


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
            # No server-side prepared statements until the connection is
            # known to be the server's own (`_direct`): behind a pooler they
            # fail.
            prepare_threshold=None,
        )
    except psycopg.Error as exc:
        mapped = _refused_for_good(exc, where) or map_pg_error(exc, where)
        raise type(mapped)(scrub(str(mapped), url)) from None
    conn.adapters.register_dumper(bool, _IntFromBool)
    pg_text.register(conn.adapters)  # a NUL stays in its row (core/ledger/postgres/text.py)
    try:
        if await _direct(conn):
            conn.prepare_threshold = ASKED_ONLY
    except psycopg.Error as exc:
        await conn.close()
        mapped = map_pg_error(exc, where)
        raise type(mapped)(scrub(str(mapped), url)) from None
    if readonly:
        # `BEGIN READ ONLY` for every transaction (reads run in one too):
        # nothing is set on the server's session, which a pooler would
        # hand to another client.
        await conn.set_read_only(True)
    return conn
