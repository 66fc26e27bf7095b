"""A PostgreSQL transaction in the shape of an aiosqlite connection.

The ledger's SQL modules (core/ledger/base.py, compare_and_set.py, inbox.py,
prune.py…) are written once against aiosqlite's `execute`/`executemany`;
inside `PgLedger.write()` they get a `PgSession`, which sends each
statement's PostgreSQL text (`Sql.postgres`, core/ledger/dialect.py).

The transaction runs in psycopg's pipeline mode (PgLedger.write): a
statement is sent at once and its result read only when it is needed, so
the statements between two reads share one round trip, and those after the
last read share the COMMIT's:

    await db.execute(…)               sent, and its result waited for: its
                                      `rowcount` is known on return
    async with db.execute(…) as cur   sent; `fetchall`/`fetchone` wait for
                                      the result (with any sent before it)
    await db.executemany(…)           sent; nothing waits: its `rowcount` is
                                      known once the transaction committed

An error of a statement nobody waited for is raised at the next wait or at
the COMMIT, which then rolls the whole transaction back, as an error at the
statement itself did: a write is all or nothing either way.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from reclaim_tui.core.ledger.dialect import POSTGRES, text_for
from reclaim_tui.core.ledger.postgres.connect import note_statement, noting

__all__ = ["PgSession"]


class _Cursor:
    """The part of an aiosqlite cursor the ledger's statements use."""

    def __init__(self, session: PgSession, cur: psycopg.AsyncCursor[Any]) -> None:
        self._session = session
        self._cur = cur

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    async def fetchall(self) -> list[Any]:
        await self._session.arrived(self._cur)
        return await self._cur.fetchall() if self._cur.description else []

    async def fetchone(self) -> Any:
        await self._session.arrived(self._cur)
        return await self._cur.fetchone() if self._cur.description else None


class _Run:
    """`await session.execute(…)` (the result waited for) and
    `async with session.execute(…) as cur` (waited for by a fetch)."""

    def __init__(self, session: PgSession, sql: str, params: Sequence[Any]) -> None:
        self._session = session
        self._sql = sql
        self._params = params

    def __await__(self) -> Generator[Any, None, _Cursor]:
        return self._session.run(self._sql, self._params, wait=True).__await__()

    async def __aenter__(self) -> _Cursor:
        return await self._session.run(self._sql, self._params, wait=False)

    async def __aexit__(self, *exc: object) -> None:
        return None


class PgSession:
    """A transaction's statements, in the aiosqlite connection's shape the
    ledger's SQL modules are written against (see the module's text)."""

    dialect = "postgres"
    #: Appended to a SELECT of rows a compare-and-set is about to write.
    row_lock = " FOR UPDATE"

    def __init__(
        self, conn: psycopg.AsyncConnection[Any], pipeline: psycopg.AsyncPipeline | None = None
    ) -> None:
        self._conn = conn
        self._pipeline = pipeline
        #: statements sent whose results have not been read yet, in order
        self._sent: list[tuple[psycopg.AsyncCursor[Any], str]] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _Run:
        return _Run(self, sql, params)

    async def run(self, sql: str, params: Sequence[Any], *, wait: bool) -> _Cursor:
        text = text_for(sql, POSTGRES)
        cur = self._conn.cursor()
        await self._send(cur, text, cur.execute(text, params))
        if wait:
            await self.arrived(cur)
        return _Cursor(self, cur)

    async def send(self, text: str, params: Any) -> _Cursor:
        """Send a statement written for PostgreSQL only (psycopg's
        placeholders); its result is read by a fetch, or after the COMMIT.
        These are the hot path's (claims, group commits), one statement
        each: prepared on the server where the connection allows it
        (connect.dial), so each is parsed once per connection rather than
        at every run; psycopg ignores the request where it does not."""
        cur = self._conn.cursor()
        await self._send(cur, text, cur.execute(text, params, prepare=True))
        return _Cursor(self, cur)

    async def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> _Cursor:
        text = text_for(sql, POSTGRES)
        cur = self._conn.cursor()
        if seq:
            await self._send(cur, text, cur.executemany(text, seq))
        return _Cursor(self, cur)  # rowcount: the rows all of them changed

    async def _send(self, cur: psycopg.AsyncCursor[Any], text: str, sending: Any) -> None:
        if self._pipeline is None:
            with noting(text, self._conn):
                await sending
            return
        self._sent.append((cur, text))
        try:
            await sending  # may read the results of statements sent before
        except psycopg.Error as exc:
            self.attribute(exc)
            raise

    async def arrived(self, cur: psycopg.AsyncCursor[Any]) -> None:
        """Wait for `cur`'s result (one round trip for every statement sent
        and not yet read)."""
        if self._pipeline is None or cur.pgresult is not None or not self._sent:
            return
        try:
            await self._pipeline.sync()
        except psycopg.Error as exc:
            self.attribute(exc)
            raise
        self._sent.clear()

    def attribute(self, exc: BaseException) -> None:
        """Name the statement a refused right was refused for: in a
        pipeline, the first one sent whose result never arrived."""
        if not isinstance(exc, pg_errors.InsufficientPrivilege):
            return
        for cur, text in self._sent:
            if cur.pgresult is None and cur.statusmessage is None:
                note_statement(exc, text, self._conn)
                return
