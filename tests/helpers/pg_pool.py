"""Fresh PostgreSQL databases made ahead of the tests that take them.

`CREATE DATABASE` copies template1 and waits for its WAL to reach the disk, and
`DROP DATABASE` waits on the disk too: about a second each on this 2-core machine,
for each of the hundreds of tests on the PostgreSQL ledger engine. A `DatabasePool`
does both on a thread of its own while the tests run: `take()` hands out a database
that was created for it and never used (renamed after the test), `give_back()`
queues its drop (`WITH (FORCE)`: connections the test left open are ended).

The thread outlasts a restart of the server (a test may restart the session's
server): a statement that fails to connect is retried until the server is back.
"""

from __future__ import annotations

import collections
import itertools
import os
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg import errors, sql

from tests.helpers.postgres import PostgresError, PostgresServer

__all__ = ["DatabasePool"]

#: Seconds a statement is retried while the server does not answer (a restart).
RETRY_SECONDS = 90.0


class DatabasePool:
    """Databases on `server`, `ahead` of them created before they are asked for."""

    def __init__(self, server: PostgresServer, *, ahead: int = 2) -> None:
        self._server = server
        self._ahead = ahead
        self._names = itertools.count(1)
        self._ready: collections.deque[str] = collections.deque()
        self._drops: collections.deque[str] = collections.deque()
        self._changed = threading.Condition()
        self._closing = False
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="pg-database-pool", daemon=True)
        self._thread.start()

    def take(self, name: str, timeout: float = 180.0) -> str:
        """A fresh database renamed `name`; its DSN."""
        with self._changed:
            ready = self._changed.wait_for(
                lambda: self._ready or self._failure is not None, timeout=timeout
            )
            if self._failure is not None:
                raise PostgresError("the database pool failed") from self._failure
            if not ready:
                raise PostgresError(f"no fresh database within {timeout} s")
            made = self._ready.popleft()
            self._changed.notify_all()  # one more to make
        self._admin(
            sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                sql.Identifier(made), sql.Identifier(name)
            )
        )
        return self._server.dsn(name)

    def give_back(self, name: str) -> None:
        """Drop `name` (on the pool's thread, soon)."""
        with self._changed:
            self._drops.append(name)
            self._changed.notify_all()

    def close(self, *, drain: bool) -> None:
        """Stop the thread; `drain`: after dropping every database it made (an external
        server's), else at once (a throwaway server's directory goes whole)."""
        with self._changed:
            if drain:
                self._drops.extend(self._ready)
                self._ready.clear()
            else:
                self._drops.clear()
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout=120)

    # -- the thread --------------------------------------------------------------------
    def _next(self) -> tuple[str, str] | None:
        """What to do next: a create while a test may wait, the drops, more creates."""
        with self._changed:
            while True:
                if self._closing and not self._drops:
                    return None
                if not self._closing and not self._ready:
                    return ("create", self._new_name())
                if self._drops:
                    return ("drop", self._drops.popleft())
                if not self._closing and len(self._ready) < self._ahead:
                    return ("create", self._new_name())
                self._changed.wait()

    def _new_name(self) -> str:
        return f"pool_{os.getpid()}_{next(self._names)}"

    def _work(self) -> None:
        try:
            while (task := self._next()) is not None:
                action, name = task
                if action == "create":
                    self._create(name)
                    with self._changed:
                        self._ready.append(name)
                        self._changed.notify_all()
                else:
                    self._retrying(
                        lambda: self._server.drop_database(name)  # noqa: B023 (called at once)
                    )
        except BaseException as exc:  # handed to the test that waits in take()
            with self._changed:
                self._failure = exc
                self._changed.notify_all()

    def _create(self, name: str) -> None:
        first = True

        def create() -> None:
            nonlocal first
            try:
                self._server.create_database(name)
            except errors.DuplicateDatabase:
                if first:
                    raise
                # A retry after a restart: the first CREATE had committed.
            finally:
                first = False

        self._retrying(create)

    def _retrying(self, action: Callable[[], None]) -> None:
        deadline = time.monotonic() + RETRY_SECONDS
        while True:
            try:
                action()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _admin(self, statement: sql.Composable) -> None:
        dsn = self._server.dsn("postgres")
        if self._server.external_dsn is not None:
            dsn = self._server.external_dsn
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(statement)
