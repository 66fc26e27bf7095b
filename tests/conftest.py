"""Shared fixtures: a temporary ledger on a manual clock, the fake backend, an engine;
a throwaway PostgreSQL server (`pg_server`) and a fresh database on it per test (`pg_dsn`)."""

from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.sinks import DirectorySink
from tests.helpers.figures import RUN_ENV
from tests.helpers.fixtures import figures_summary
from tests.helpers.pg_pool import DatabasePool
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer, started
from tests.helpers.skips import skipped_summary
from tests.helpers.slow_first import slow_first

#: The fixtures that need PostgreSQL: a test using one gets the `postgres` marker.
_PG_FIXTURES = frozenset({"pg_server", "pg_databases", "pg_dsn", "pg_bouncer", "bouncer_dsn"})
_pg_databases = itertools.count(1)


@pytest.fixture(autouse=True)
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The console's settings file lives under the test's folder: no test
    (console, e2e, benchmark helper) reads the operator's, nor writes into
    the real home."""
    home = tmp_path / "config-home"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("RECLAIM_CONFIG", raising=False)
    return home


@pytest.fixture(autouse=True)
def trace_hook_kept() -> Iterator[None]:
    """A test that sets its own trace hook puts back the one it found: under CI
    that is coverage's tracer, and a hook left at None leaves every later test
    of the process unmeasured (the floors then fail by chance)."""
    before = sys.gettrace()
    yield
    assert sys.gettrace() is before, "a trace hook was left in place of the one before"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake(clock: ManualClock) -> FakeBackend:
    return FakeBackend(clock=clock, latency=None)


#: Every test that takes `ledger` (or `engine`) runs on both engines: the
#: ledger's contract suite (issue 13). `-m "not postgres"` leaves the second out.
LEDGER_ENGINES = ("sqlite", "postgres")


@pytest.fixture(params=LEDGER_ENGINES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's ledger lives, once per engine: a SQLite file in the
    test's folder, or a fresh PostgreSQL database. Open it as often as the
    test needs (`open_ledger(db_url, …)`, `--db db_url`)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    return str(tmp_path / "ledger.db")


@pytest.fixture
async def ledger(db_url: str, clock: ManualClock) -> AsyncIterator[Ledger]:
    led = await open_ledger(db_url, clock=clock)
    yield led
    await led.close()


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    return tmp_path / "articles"


@pytest.fixture
def engine(ledger: Ledger, fake: FakeBackend, out_dir: Path) -> Engine:
    return Engine(ledger, fake, DirectorySink(out_dir), config=EngineConfig(), owner="test|1|a")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session (initdb into a temporary directory,
    a free loopback port), or the existing one of RECLAIM_TEST_PG_DSN. Without
    PostgreSQL installed: skipped, except under CI (env CI), where that fails."""
    server = PostgresServer.from_env()
    started(server)
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def pg_databases(pg_server: PostgresServer) -> Iterator[DatabasePool]:
    """`pg_server`'s fresh databases, created (and dropped) on a thread of their own
    while the tests run (tests/helpers/pg_pool.py)."""
    pool = DatabasePool(pg_server)
    try:
        yield pool
    finally:
        pool.close(drain=pg_server.external_dsn is not None)


@pytest.fixture
def pg_dsn(pg_databases: DatabasePool, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database for this test, named after it; dropped afterwards (with any
    connections the test left open). Its DSN: postgresql://postgres@127.0.0.1:PORT/NAME."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]
    # The pid: two sessions may share the server of RECLAIM_TEST_PG_DSN.
    name = f"t_{stem}_{os.getpid()}_{next(_pg_databases)}"
    dsn = pg_databases.take(name)
    yield dsn
    # Dropped, not left for the end: each database is some 7 MB of disk.
    pg_databases.give_back(name)


@pytest.fixture(scope="session", params=("transaction", "session"))
def pg_bouncer(request: pytest.FixtureRequest, pg_server: PostgresServer) -> Iterator[PgBouncer]:
    """A real PgBouncer (tests/helpers/pgbouncer.py) in front of `pg_server`, once
    in `pool_mode=transaction` and once in `pool_mode=session`, for the session."""
    bouncer = PgBouncer(pg_server, pool_mode=request.param)
    started_bouncer(bouncer)
    try:
        yield bouncer
    finally:
        bouncer.cleanup()


@pytest.fixture
def bouncer_dsn(pg_bouncer: PgBouncer, pg_dsn: str) -> str:
    """This test's fresh database (`pg_dsn`), reached through `pg_bouncer`."""
    return pg_bouncer.via(pg_dsn)


def pytest_configure(config: pytest.Config) -> None:
    # One id for the whole run, set before pytest-xdist starts its workers (they
    # inherit it): every worker appends its reliability figures to one file.
    os.environ.setdefault(RUN_ENV, str(os.getpid()))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    # Here, not in tests/reliability/conftest.py: the controller of an xdist run
    # collects nothing, so it loads no conftest below this one.
    figures_summary(terminalreporter)
    skipped_summary(terminalreporter)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Under xdist, the known-long tests first (tests/helpers/slow_first.py).
    slow_first(config, items)
    # `-m postgres` / `-m "not postgres"` select by fixture, marked or not.
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_pg = callspec is not None and callspec.params.get("db_url") == "postgres"
        if on_pg or _PG_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.postgres)
