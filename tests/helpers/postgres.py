"""A throwaway PostgreSQL server for the tests of the PostgreSQL ledger backend.

`PostgresServer().start()` runs initdb into a fresh temporary directory and starts
a postmaster on a free loopback port (trust authentication, user `postgres`,
UTF8, locale C, fsync and synchronous_commit on: the durability tests need a real
commit). `create_database()` gives each test its own database; `cleanup()` stops
the server and deletes the directory.

The binaries: `RECLAIM_PG_BIN` (a directory holding initdb and pg_ctl), else the
newest Debian `/usr/lib/postgresql/<major>/bin`, else `pg_ctl` on PATH. PostgreSQL
refuses to run as root: as root, initdb and pg_ctl run as the `postgres` user via
`runuser`, and the directory is handed to that user.

`RECLAIM_TEST_PG_DSN=postgresql://user@host:port/db` uses that existing server
instead (nothing is started; `create_database` and `drop_database` work against it,
connecting to the DSN's own database; restarts are refused).
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NoReturn, Self
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

__all__ = [
    "DSN_ENV",
    "PG_BIN_ENV",
    "PostgresError",
    "PostgresNotFound",
    "PostgresServer",
    "find_bin_dir",
    "postgres_missing",
    "started",
]

PG_BIN_ENV = "RECLAIM_PG_BIN"
DSN_ENV = "RECLAIM_TEST_PG_DSN"
SERVICE_USER = "postgres"
#: Seconds pg_ctl waits for a start, a restart or a stop (`pg_ctl -t`).
WAIT_SECONDS = 60
_DEBIAN_ROOT = Path("/usr/lib/postgresql")
_MAX_IDENTIFIER = 63  # NAMEDATALEN - 1
_names = itertools.count(1)


class PostgresError(RuntimeError):
    """PostgreSQL was found but did not do what it was asked (initdb, start, stop)."""


class PostgresNotFound(PostgresError):
    """No PostgreSQL server binaries on this machine (nor a server to use instead)."""


def _has_server(bin_dir: Path) -> bool:
    return all((bin_dir / name).is_file() for name in ("initdb", "pg_ctl", "postgres"))


def find_bin_dir() -> Path:
    """The directory of initdb, pg_ctl and postgres, or `PostgresNotFound` naming
    every place looked at."""
    override = os.environ.get(PG_BIN_ENV)
    if override:
        bin_dir = Path(override)
        if not _has_server(bin_dir):
            raise PostgresNotFound(
                f"{PG_BIN_ENV}={override} does not hold initdb, pg_ctl and postgres"
            )
        return bin_dir
    majors = []
    for candidate in _DEBIAN_ROOT.glob("*/bin"):
        if candidate.parent.name.isdigit() and _has_server(candidate):
            majors.append((int(candidate.parent.name), candidate))
    if majors:
        return max(majors)[1]
    on_path = shutil.which("pg_ctl")
    if on_path:
        # /usr/local/bin/pg_ctl may be a lone symlink: initdb sits beside its target.
        for bin_dir in (Path(on_path).resolve().parent, Path(on_path).parent):
            if _has_server(bin_dir):
                return bin_dir
    raise PostgresNotFound(
        f"no PostgreSQL server binaries: {PG_BIN_ENV} is not set, no "
        f"{_DEBIAN_ROOT}/<major>/bin holds initdb, pg_ctl and postgres, and pg_ctl is "
        f"not on PATH (install them: `apt-get install postgresql`; or point "
        f"{DSN_ENV} at a running server)"
    )


def postgres_missing(exc: PostgresNotFound) -> NoReturn:
    """Skip the test for want of PostgreSQL, except under CI (env `CI`), where that is
    a failure: CI must run the tests on both ledger engines."""
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{exc} (CI is set: CI must run both ledger engines)", pytrace=False)
    pytest.skip(str(exc))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(frozen=True)
class _Owner:
    """Who runs the server: ourselves, or (as root) the postgres user via runuser."""

    prefix: tuple[str, ...]
    uid: int | None = None
    gid: int | None = None

    @classmethod
    def detect(cls) -> _Owner:
        if os.geteuid() != 0:
            return cls(prefix=())
        try:
            user = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise PostgresError(
                f"running as root, and PostgreSQL refuses root, but there is no "
                f"{SERVICE_USER!r} user to run it as"
            ) from None
        runuser = shutil.which("runuser")
        if runuser is None:
            raise PostgresError("running as root and `runuser` (util-linux) is missing")
        return cls(prefix=(runuser, "-u", SERVICE_USER, "--"), uid=user.pw_uid, gid=user.pw_gid)

    def give(self, path: Path) -> None:
        if self.uid is not None and self.gid is not None:
            os.chown(path, self.uid, self.gid)


class PostgresServer:
    """One PostgreSQL server for tests: a fresh local cluster, or the existing server
    of `RECLAIM_TEST_PG_DSN` (`external_dsn`). Also a context manager."""

    def __init__(
        self,
        *,
        bin_dir: Path | None = None,
        external_dsn: str | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self.external_dsn = external_dsn
        self._bin_dir = bin_dir
        self._base_dir = base_dir
        self.root: Path | None = None
        self.port: int | None = None
        self.running = False
        #: Seconds the last start() took (initdb + pg_ctl start; 0 when external).
        self.start_seconds = 0.0
        self._owner: _Owner | None = None

    @classmethod
    def from_env(cls) -> PostgresServer:
        """The server of `RECLAIM_TEST_PG_DSN` if set, else a local one to start."""
        return cls(external_dsn=os.environ.get(DSN_ENV) or None)

    # -- paths ---------------------------------------------------------------

    @property
    def bin_dir(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = find_bin_dir()
        return self._bin_dir

    @property
    def data_dir(self) -> Path:
        return self._root() / "data"

    @property
    def socket_dir(self) -> Path:
        return self._root() / "sock"

    @property
    def log_file(self) -> Path:
        return self._root() / "server.log"

    def _root(self) -> Path:
        if self.root is None:
            raise PostgresError("the server has not been started")
        return self.root

    # -- lifecycle -----------------------------------------------------------

    def start(self) -> Self:
        """initdb into a fresh temporary directory and start on a free port (the
        external server: only checks that it answers)."""
        if self.running:
            return self
        began = time.monotonic()
        if self.external_dsn is not None:
            with psycopg.connect(self.external_dsn, connect_timeout=10) as conn:
                conn.execute("SELECT 1")
            self.running = True
            return self
        bin_dir = self.bin_dir  # PostgresNotFound before anything is created
        self._owner = _Owner.detect()
        self.root = Path(tempfile.mkdtemp(prefix="reclaim-pg-", dir=self._base_dir))
        atexit.register(self.cleanup)
        try:
            self._owner.give(self.root)
            self.socket_dir.mkdir()
            self._owner.give(self.socket_dir)
            self._run(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "-U",
                    SERVICE_USER,
                    # A throwaway cluster: initdb's own fsync of the new files
                    # costs time and proves nothing (the server runs with fsync on).
                    "--no-sync",
                ],
                what="initdb",
            )
            self._start_on_free_port()
        except BaseException:
            self.cleanup()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def _start_on_free_port(self) -> None:
        # The port is free when picked, not necessarily when the postmaster binds it:
        # another process may take it in between. Retry on a new one.
        for attempt in range(5):
            self.port = _free_port()
            try:
                self._pg_ctl("start", "-l", str(self.log_file), "-o", self._server_options())
            except PostgresError:
                if attempt < 4 and "already in use" in self._log_tail():
                    continue
                raise
            self.running = True
            return

    def _server_options(self) -> str:
        return (
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1"
            " -c fsync=on -c synchronous_commit=on -c max_connections=200"
        )

    def restart_immediate(self) -> None:
        """`pg_ctl restart -m immediate`: the postmaster and its backends are killed
        without a checkpoint (a crash, as far as the data goes); the new one replays
        the WAL before it accepts connections, which pg_ctl waits for. Open
        connections are broken."""
        self._require_local("restart")
        # -l again: without it the new postmaster would write to pg_ctl's stdout,
        # our pipe, and hold it open for ever.
        self._pg_ctl(
            "restart",
            "-m",
            "immediate",
            "-l",
            str(self.log_file),
            "-o",
            self._server_options(),
        )
        self.running = True

    def stop(self) -> None:
        """`pg_ctl stop -m fast` (rolls back open transactions, closes connections)."""
        if self.external_dsn is not None or not self.running:
            self.running = False
            return
        self._pg_ctl("stop", "-m", "fast")
        self.running = False

    def resume(self) -> None:
        """Start a server `stop()` stopped, on the same port and data
        (a database server that comes up after its clients)."""
        if self.external_dsn is not None:
            raise PostgresError(f"cannot resume the external server of {DSN_ENV}")
        if not self.running:
            self._pg_ctl("start", "-l", str(self.log_file), "-o", self._server_options())
            self.running = True

    def cleanup(self) -> None:
        """Stop the server if it runs and delete its directory. Idempotent."""
        atexit.unregister(self.cleanup)
        try:
            if self.running and self.external_dsn is None:
                try:
                    self.stop()
                except PostgresError:
                    # Last resort; the postmaster also shuts itself down once it
                    # finds its lock file gone with the directory.
                    self._pg_ctl("stop", "-m", "immediate", check=False)
        finally:
            self.running = False
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    # -- databases -----------------------------------------------------------

    def dsn(self, dbname: str = "postgres") -> str:
        """`postgresql://postgres@127.0.0.1:PORT/dbname` (external: its DSN, with
        the database replaced)."""
        if self.external_dsn is not None:
            return _with_dbname(self.external_dsn, dbname)
        if self.port is None:
            raise PostgresError("the server has not been started")
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/{dbname}"

    def _admin_dsn(self) -> str:
        return self.external_dsn if self.external_dsn is not None else self.dsn("postgres")

    def create_database(self, name: str | None = None) -> str:
        """`CREATE DATABASE` (from template1) and its DSN. Without a name: a new
        unique one."""
        name = name or f"reclaim_test_{os.getpid()}_{next(_names)}"
        _check_name(name)
        with psycopg.connect(self._admin_dsn(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.dsn(name)

    def drop_database(self, name: str) -> None:
        """`DROP DATABASE IF EXISTS … WITH (FORCE)`: connections a test left open are
        terminated first."""
        _check_name(name)
        with psycopg.connect(self._admin_dsn(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    # -- processes -----------------------------------------------------------

    def _require_local(self, what: str) -> None:
        if self.external_dsn is not None:
            raise PostgresError(f"cannot {what} the external server of {DSN_ENV}")
        if not self.running:
            raise PostgresError(f"cannot {what}: the server is not running")

    def _pg_ctl(self, action: str, *args: str, check: bool = True) -> None:
        self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                action,
                "-D",
                str(self.data_dir),
                "-w",
                "-t",
                str(WAIT_SECONDS),
                *args,
            ],
            what=f"pg_ctl {action}",
            check=check,
        )

    def _run(self, argv: Sequence[str], *, what: str, check: bool = True) -> None:
        owner = self._owner or _Owner(prefix=())
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"  # English messages: "already in use" is matched above
        try:
            done = subprocess.run(
                [*owner.prefix, *argv],
                cwd=self._root(),  # the postgres user may not enter ours
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=WAIT_SECONDS + 30,
                # Its own session: a Ctrl-C to pytest does not reach the
                # postmaster; the fixture's teardown stops it.
                start_new_session=True,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise PostgresError(f"{what} did not finish in {exc.timeout} s") from exc
        if check and done.returncode != 0:
            raise PostgresError(
                f"{what} failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
                f"{self._log_tail()}"
            )

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except (OSError, PostgresError):
            return ""
        return "\n--- server log (tail) ---\n" + "\n".join(text.splitlines()[-lines:])


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or len(name) > _MAX_IDENTIFIER:
        raise ValueError(
            f"database name {name!r}: lower-case letters, digits and _, at most "
            f"{_MAX_IDENTIFIER} characters"
        )


def _with_dbname(dsn: str, dbname: str) -> str:
    if "://" in dsn:
        parts = urlsplit(dsn)
        return urlunsplit(parts._replace(path="/" + dbname))
    return make_conninfo(dsn, dbname=dbname)


def started(server: PostgresServer) -> PostgresServer:
    """`server`, started; without PostgreSQL installed the test is skipped
    (failed under CI: postgres_missing)."""
    missing: PostgresNotFound | None = None
    try:
        server.start()
    except PostgresNotFound as exc:
        missing = exc
    if missing is not None:  # outside the except: no "During handling …" chain
        postgres_missing(missing)
    return server
