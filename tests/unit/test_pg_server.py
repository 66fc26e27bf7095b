"""The PostgreSQL test server itself: the session fixture answers with the settings
the durability tests rely on, each test gets its own database, and an immediate
restart (a crash as far as the data goes) keeps what was committed."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.helpers.postgres import PostgresServer, started

pytestmark = pytest.mark.postgres


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    """A second local server, restarted at will without touching the session's."""
    server = PostgresServer()
    started(server)
    try:
        yield server
    finally:
        server.cleanup()


def test_session_server_answers_with_durable_settings(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute("SELECT version()").fetchone()
        assert row is not None and str(row[0]).startswith("PostgreSQL ")
        settings = {
            name: conn.execute(f"SHOW {name}").fetchone()
            for name in ("synchronous_commit", "fsync", "server_encoding")
        }
    assert settings == {
        "synchronous_commit": ("on",),
        "fsync": ("on",),
        "server_encoding": ("UTF8",),
    }


def test_each_test_gets_a_fresh_database(pg_server: PostgresServer, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        (name,) = conn.execute("SELECT current_database()").fetchone() or ("",)
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
    assert pg_dsn == pg_server.dsn(name)
    assert name.startswith("t_test_each_test_gets_a_fresh_database_")
    assert tables == (0,)


def test_immediate_restart_keeps_committed_rows(own_server: PostgresServer) -> None:
    dsn = own_server.create_database("restart_probe")
    assert dsn == f"postgresql://postgres@127.0.0.1:{own_server.port}/restart_probe"
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, note text)")
        conn.execute("INSERT INTO t VALUES (1, 'committed')")
        conn.commit()
        conn.execute("INSERT INTO t VALUES (2, 'never committed')")
        # Still open when the server dies: its insert must not survive.
        own_server.restart_immediate()
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT id, note FROM t ORDER BY id").fetchall()
    assert rows == [(1, "committed")]
    log = own_server.log_file.read_text()
    assert "database system was interrupted" in log  # WAL replay, not a clean start
