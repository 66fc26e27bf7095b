"""The end of the WAL a test may read with pg_walinspect.

`pg_get_wal_records_info(start, end)` refuses an `end` past what the server
has flushed ("cannot accept future end LSN"), and `pg_current_wal_lsn()` is
what it has written: records of a transaction still open elsewhere, or of a
background process (a standby snapshot, autovacuum), are written before
they are flushed. The commit of a transaction that wrote WAL flushes it
up to its own record (one that wrote none commits without a flush, even
with an id), so a transactional logical message, committed, makes every
record before it readable; the write position read just before it is then
an end that is never refused."""

from __future__ import annotations

from typing import Any

import psycopg

__all__ = ["readable_wal_end"]


def readable_wal_end(conn: psycopg.Connection[Any]) -> str:
    """The WAL's write position now, flushed (`conn` in autocommit)."""
    assert conn.autocommit, "the commit below must be a transaction of its own"
    row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    conn.execute("SELECT pg_logical_emit_message(true, 'reclaim-tui-tests', 'flush')")
    return str(row[0])
