"""A PostgreSQL transaction in the shape of an aiosqlite connection.

The ledger's SQL modules (core/ledger/base.py, compare_and_set.py, inbox.py,
prune.py…) are written once against aiosqlite's `execute`/`executemany`;
inside `PgLedger.write()` they get a `PgSession`, which rewrites each
statement for the server (core/ledger/pg_sql.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from reclaim_tui.core.ledger.pg_connect import noting
from reclaim_tui.core.ledger.pg_sql import reorder, to_postgres

__all__ = ["PgSession"]


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
        with noting(text, self._conn):
            await cur.execute(text, reorder(params, order))
        return _Cursor(cur)

    async def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> _Cursor:
        text, order = to_postgres(sql)
        cur = self._conn.cursor()
        if seq:
            with noting(text, self._conn):
                await cur.executemany(text, [reorder(p, order) for p in seq])
        return _Cursor(cur)  # rowcount: the rows all of them changed
