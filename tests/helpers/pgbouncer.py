"""A real PgBouncer in front of the tests' throwaway PostgreSQL server.

Managed PostgreSQL services hand out a pooler endpoint (PgBouncer in
`pool_mode=transaction`, mostly): a client's consecutive transactions may run
on different server connections, and whatever one client leaves on a server
connection (a prepared statement, a session-level SET) is met by the next
client that gets it. These tests run the ledger through such a pooler.

    with PgBouncer(pg_server, pool_mode="transaction").start() as bouncer:
        url = bouncer.dsn("mydb")        # postgresql://postgres@127.0.0.1:PORT/mydb

- `pool_mode`: "transaction" or "session" (or "statement");
- `pool_size`: server connections per (database, user) pair (`default_pool_size`);
- `auth`: "trust" (any password) or "md5" (the user `postgres` with `password`;
  `dsn()` then carries it) — the auth file lists the user either way;
- `query_wait_timeout`: seconds a client waits for a server connection
  before PgBouncer drops it (PgBouncer's default: 120);
- `settings`: more `[pgbouncer]` settings, as given.

Every database of the server is served (`* = host=… port=…`). PgBouncer
refuses to run as root: as root it runs as the `postgres` user (`runuser`),
like the server (tests/helpers/postgres.py). It listens on a free loopback
port, writes its log to `log_file`, and `cleanup()` (or leaving the `with`)
stops it and deletes its directory. `admin_dsn()` is its console database
(`SHOW POOLS`, `SHOW CLIENTS`).

The binary: `RECLAIM_PGBOUNCER` if set, else `pgbouncer` on PATH or
/usr/sbin/pgbouncer (Debian's package `pgbouncer`). Missing: the test is
skipped, failed under CI (as for PostgreSQL itself).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

import psycopg

from tests.helpers.postgres import (
    SERVICE_USER,
    PostgresError,
    PostgresNotFound,
    PostgresServer,
    _Owner,
    postgres_missing,
)

__all__ = ["PGBOUNCER_ENV", "PgBouncer", "find_pgbouncer", "started_bouncer"]

PGBOUNCER_ENV = "RECLAIM_PGBOUNCER"
_START_SECONDS = 20.0


def find_pgbouncer() -> Path:
    """The pgbouncer binary, or `PostgresNotFound` saying where it was looked for."""
    override = os.environ.get(PGBOUNCER_ENV)
    if override:
        if not Path(override).is_file():
            raise PostgresNotFound(f"{PGBOUNCER_ENV}={override} is not a file")
        return Path(override)
    for candidate in (shutil.which("pgbouncer"), "/usr/sbin/pgbouncer"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    raise PostgresNotFound(
        f"no pgbouncer: {PGBOUNCER_ENV} is not set, and it is neither on PATH nor"
        " /usr/sbin/pgbouncer (install it: `apt-get install pgbouncer`)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PgBouncer:
    """One PgBouncer process in front of `server` (see the module's text)."""

    def __init__(
        self,
        server: PostgresServer,
        *,
        pool_mode: str = "transaction",
        pool_size: int = 20,
        auth: str = "trust",
        password: str = "bouncer-secret",
        query_wait_timeout: int = 120,
        settings: Mapping[str, str | int] | None = None,
    ) -> None:
        if auth not in ("trust", "md5"):
            raise ValueError(f"auth {auth!r}: trust or md5")
        self.server = server
        self.pool_mode = pool_mode
        self.pool_size = pool_size
        self.auth = auth
        self.password = password
        self.query_wait_timeout = query_wait_timeout
        self.settings = dict(settings or {})
        self.root: Path | None = None
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        if self.root is None:
            raise PostgresError("pgbouncer has not been started")
        return self.root / "pgbouncer.log"

    def dsn(self, dbname: str = "postgres") -> str:
        """The URL of `dbname` through the pooler."""
        if self.port is None:
            raise PostgresError("pgbouncer has not been started")
        secret = f":{self.password}" if self.auth == "md5" else ""
        return f"postgresql://{SERVICE_USER}{secret}@127.0.0.1:{self.port}/{dbname}"

    def via(self, server_dsn: str) -> str:
        """A DSN of the server (`pg_dsn`), pointed at the pooler instead."""
        return self.dsn(server_dsn.rsplit("/", 1)[1])

    def admin_dsn(self) -> str:
        return self.dsn("pgbouncer")

    def show(self, what: str) -> list[dict[str, object]]:
        """`SHOW POOLS` and the like on the admin console, as dicts."""
        with psycopg.connect(self.admin_dsn(), autocommit=True, prepare_threshold=None) as conn:
            cur = conn.execute(f"SHOW {what}")
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> Self:
        binary = find_pgbouncer()
        if self.server.external_dsn is not None:
            raise PostgresError("pgbouncer is put in front of a server the tests started")
        if self.server.port is None:
            raise PostgresError("start the server before pgbouncer")
        owner = _Owner.detect()
        self.root = Path(tempfile.mkdtemp(prefix="reclaim-pgbouncer-"))
        atexit.register(self.cleanup)
        try:
            owner.give(self.root)
            for attempt in range(5):
                self.port = _free_port()
                self._write_config(owner)
                self.log_file.touch()
                owner.give(self.log_file)
                self._spawn(owner, binary)
                if self._wait_listening():
                    return self
                self._terminate()
                if attempt < 4 and "Address already in use" in self._log_tail():
                    continue
                raise PostgresError(f"pgbouncer did not start:{self._log_tail()}")
        except BaseException:
            self.cleanup()
            raise
        return self

    def _spawn(self, owner: _Owner, binary: Path) -> None:
        assert self.root is not None
        self._proc = subprocess.Popen(
            [*owner.prefix, str(binary), str(self.root / "pgbouncer.ini")],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def restart(self) -> None:
        """Stop pgbouncer (every client's connection breaks) and start it
        again on the same port and settings, as an administrator's restart."""
        if self.root is None:
            raise PostgresError("pgbouncer has not been started")
        self._terminate()
        self._spawn(_Owner.detect(), find_pgbouncer())
        if not self._wait_listening():
            raise PostgresError(f"pgbouncer did not start again:{self._log_tail()}")

    def _write_config(self, owner: _Owner) -> None:
        assert self.root is not None and self.server.port is not None
        if self.auth == "md5":
            digest = hashlib.md5((self.password + SERVICE_USER).encode()).hexdigest()
            users = f'"{SERVICE_USER}" "md5{digest}"\n'
        else:
            users = f'"{SERVICE_USER}" ""\n'
        (self.root / "users.txt").write_text(users)
        settings: dict[str, str | int] = {
            "listen_addr": "127.0.0.1",
            "listen_port": self.port or 0,
            "unix_socket_dir": "",
            "auth_type": self.auth,
            "auth_file": str(self.root / "users.txt"),
            "admin_users": SERVICE_USER,
            "pool_mode": self.pool_mode,
            "default_pool_size": self.pool_size,
            "max_client_conn": 200,
            "query_wait_timeout": self.query_wait_timeout,
            "logfile": str(self.log_file),
            "pidfile": str(self.root / "pgbouncer.pid"),
            # psycopg and libpq send it; a pooler that does not know it refuses the client
            "ignore_startup_parameters": "extra_float_digits",
            **self.settings,
        }
        lines = [
            "[databases]",
            f"* = host=127.0.0.1 port={self.server.port}",
            "[pgbouncer]",
            *(f"{k} = {v}" for k, v in settings.items()),
        ]
        (self.root / "pgbouncer.ini").write_text("\n".join(lines) + "\n")
        for name in ("users.txt", "pgbouncer.ini"):
            owner.give(self.root / name)

    def _wait_listening(self) -> bool:
        assert self._proc is not None and self.port is not None
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        # Its own session (start_new_session): the group is runuser and pgbouncer.
        try:
            os.killpg(proc.pid, signal.SIGINT)  # SIGINT: shut down at once
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def cleanup(self) -> None:
        """Stop pgbouncer and delete its directory. Idempotent."""
        atexit.unregister(self.cleanup)
        try:
            self._terminate()
        finally:
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def __enter__(self) -> Self:
        return self.start() if self._proc is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            # Why the pooler ended a connection ("closing because: …") is in
            # its log only, which cleanup deletes: on the test's stdout first.
            print(self._log_tail(80))
        self.cleanup()

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except (OSError, PostgresError):
            return ""
        return "\n--- pgbouncer log (tail) ---\n" + "\n".join(text.splitlines()[-lines:])


def started_bouncer(bouncer: PgBouncer) -> PgBouncer:
    """`bouncer`, started; without pgbouncer installed the test is skipped
    (failed under CI: postgres_missing)."""
    missing: PostgresNotFound | None = None
    try:
        bouncer.start()
    except PostgresNotFound as exc:
        missing = exc
    if missing is not None:
        postgres_missing(missing)
    return bouncer
