"""Upgrades on purpose (issue 33, 4): `reclaim-tui upgrade`, run by the
ledger's owner, applies the schema migrations and nothing else; the
DML-only app role is told to have the owner run it, never to grant itself
CREATE; `status` says as whom. A ledger made by the previous PostgreSQL
schema (tests/fixtures/ledgers/postgres-v2-*.sql, the last before the
process registry), loaded as the owner role; and an old SQLite ledger.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.helpers import run_cli
from tests.helpers.postgres import find_bin_dir

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
OWNER, APP = "up_owner", "up_app"
API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]


def as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path, "", ""))


def _drop(conn: psycopg.Connection[Any], role: str) -> None:
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        conn.execute(f"DROP OWNED BY {role} CASCADE")
        conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def old_ledger(pg_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """The schema-2 ledger, loaded by its owner role; the app role granted
    the README's DML rights on it (before the upgrade)."""
    conn = psycopg.connect(pg_dsn, autocommit=True)
    for role in (APP, OWNER):
        _drop(conn, role)
    try:
        conn.execute(f"CREATE ROLE {OWNER} LOGIN")
        # The dump creates its schema and pg_trgm (a trusted extension).
        conn.execute(f"GRANT CREATE ON DATABASE {urlsplit(pg_dsn).path[1:]} TO {OWNER}")
        (dump,) = FIXTURES.glob("postgres-v2-*.sql")
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump),
             as_role(pg_dsn, OWNER)],
            check=True, capture_output=True,
        )  # fmt: skip
        conn.execute(f"CREATE ROLE {APP} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA reclaim_tui TO {APP}")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reclaim_tui TO {APP}"
        )
        conn.execute(f"GRANT SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA reclaim_tui TO {APP}")
        yield conn
    finally:
        for role in (APP, OWNER):
            _drop(conn, role)
        conn.close()


def version(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT value FROM reclaim_tui.meta WHERE key = 'schema'").fetchone()
    assert row is not None
    return str(row[0])


def test_the_owner_upgrades_and_the_app_role_is_told_to_ask_it(
    old_ledger: psycopg.Connection[Any], pg_dsn: str
) -> None:
    app, owner = as_role(pg_dsn, APP), as_role(pg_dsn, OWNER)
    refused = run_cli(["tick", "--db", app, *API])
    assert refused.returncode == 4, refused.stderr
    assert f'its owner role "{OWNER}" runs `reclaim-tui upgrade' in refused.stderr
    assert "CREATE" not in refused.stderr.split("(")[0]  # no grant of CREATE asked for
    assert "GRANT USAGE ON SCHEMA" not in refused.stderr
    status = run_cli(["status", "--db", app])
    assert status.returncode == 4
    assert f'its owner role "{OWNER}" runs `reclaim-tui upgrade' in status.stderr

    listed = run_cli(["upgrade", "--dry-run", "--json", "--db", owner])
    assert listed.returncode == 0, listed.stderr
    plan = json.loads(listed.stdout)
    assert (plan["stored"], plan["owner"], plan["role"], plan["applied"]) == (
        2,
        OWNER,
        OWNER,
        False,
    )
    assert [m["number"] for m in plan["migrations"]] == list(range(3, plan["target"] + 1))
    assert version(old_ledger) == "2"  # a dry run changes nothing

    done = run_cli(["upgrade", "--db", owner])
    assert done.returncode == 0, done.stderr
    assert f"schema 2 → {plan['target']}, applied" in done.stdout
    assert version(old_ledger) == str(plan["target"])
    again = run_cli(["upgrade", "--db", owner])
    assert "up to date" in again.stdout
    # Nothing was sent or delivered, and no process registered itself.
    assert old_ledger.execute("SELECT count(*) FROM reclaim_tui.processes").fetchone() == (0,)
    assert run_cli(["status", "--db", app]).returncode == 0


def test_an_old_sqlite_ledger_is_upgraded_by_the_command(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.executescript(sorted(FIXTURES.glob("sqlite-v4-*.sql"))[0].read_text())
    conn.close()
    status = run_cli(["status", "--db", str(db)])
    assert status.returncode == 4 and f"run `reclaim-tui upgrade --db {db}`" in status.stderr
    listed = run_cli(["upgrade", "--dry-run", "--json", "--db", str(db)])
    plan = json.loads(listed.stdout)
    assert plan["stored"] == 4 and plan["migrations"][0]["number"] == 5
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone() == (4,)
    assert run_cli(["upgrade", "--db", str(db)]).returncode == 0
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone() == (plan["target"],)
    assert run_cli(["status", "--db", str(db)]).returncode == 0
