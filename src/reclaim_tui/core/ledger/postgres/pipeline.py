"""One connection's transactions in one round trip, and their waits and
cancellations.

- `pipelined`: BEGIN, the settings, the statements and COMMIT of one
  transaction in one pipeline; `settle` rolls back what a failed pipeline
  left, or closes a connection left mid-protocol.
- `read_once`/`stop_read`: one read in its own transaction, one round trip;
  a read the console replaced is stopped by the server, never mid-protocol.
- `said_if_slow`: a wait behind a full pooler is logged, not silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg.pq import PipelineStatus, TransactionStatus

from reclaim_tui.core.ledger.postgres.connect import noting
from reclaim_tui.core.ledger.postgres.pipeline_end import end_at_sync

__all__ = ["SLOW_WAIT", "pipelined", "read_once", "said_if_slow", "settle", "stop_read"]

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


#: The level is said, not left to the database's default, which an
#: administrator may have made SERIALIZABLE: the claims' SKIP LOCKED and the
#: compare-and-set writes are made for READ COMMITTED, where a row another
#: host moved meanwhile is skipped or re-checked, not a serialization failure.
BEGIN = "BEGIN ISOLATION LEVEL READ COMMITTED"
BEGIN_READ_ONLY = "BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY"


@asynccontextmanager
async def pipelined(
    conn: psycopg.AsyncConnection[Any], settings: Sequence[str]
) -> AsyncIterator[psycopg.AsyncPipeline]:
    """One transaction in one pipeline (psycopg's pipeline mode): BEGIN at
    READ COMMITTED (READ ONLY on a read-only connection), `settings`, the block's
    statements and COMMIT are sent as they come and waited for once, by the
    Sync that leaves the pipeline; a statement whose result the block reads
    waits earlier (core/ledger/postgres/session.py). Not psycopg's
    `transaction()`, which syncs on entering and before COMMIT (3 round
    trips for one statement). A block that raised sends no COMMIT: what the
    failed pipeline left is rolled back (`settle`). Nothing is sent after
    that Sync (core/ledger/postgres/pipeline_end.py): behind a transaction
    pooler it ends this client's turn on the server connection."""
    try:
        async with conn.pipeline() as pipeline:
            end_at_sync(pipeline)
            await conn.execute(BEGIN_READ_ONLY if conn.read_only else BEGIN)
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
