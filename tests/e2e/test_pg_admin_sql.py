"""Roles set up by a non-superuser administrator, as on a managed service
(issue 33, 5): the administrator has CREATEROLE and the database's CREATE
right, not superuser. README's owner SQL failed there — `CREATE SCHEMA …
AUTHORIZATION owner` needs the administrator to be a member of the owner
role first. The app role's grants come from `reclaim-tui grants`, including
ALTER DEFAULT PRIVILEGES, so the tables a later migration adds are the app
role's too without an administrator.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.helpers import run_cli

ADMIN, OWNER, APP = "ga_admin", "reclaim_owner", "reclaim_app"
API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]

#: The administrator's SQL for the owner role, as a non-superuser can run it
#: (the report's Docs text for README: PostgreSQL, roles).
ADMIN_OWNER_SQL = """\
-- owner role: as an administrator (CREATEROLE; superuser not needed), in the ledger's database
CREATE ROLE reclaim_owner LOGIN PASSWORD 'change me';
GRANT reclaim_owner TO CURRENT_USER;  -- a non-superuser may give a schema only to a role it is in
CREATE SCHEMA reclaim_tui AUTHORIZATION reclaim_owner;
-- optional, for the console filter's trigram indexes (any schema will do):
CREATE SCHEMA IF NOT EXISTS extensions;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA extensions;
GRANT USAGE ON SCHEMA extensions TO reclaim_owner;
"""
#: The same without the membership: README's SQL before this issue.
WITHOUT_MEMBERSHIP = "\n".join(
    line for line in ADMIN_OWNER_SQL.splitlines() if not line.startswith("GRANT reclaim_owner")
)


def as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path, "", ""))


def _drop(conn: psycopg.Connection[Any], role: str) -> None:
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        conn.execute(f"DROP OWNED BY {role} CASCADE")
        conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def administrator(pg_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection as a CREATEROLE, non-superuser administrator that may
    create in the database (a managed service's admin role)."""
    root = psycopg.connect(pg_dsn, autocommit=True)
    for role in (APP, OWNER, ADMIN):
        _drop(root, role)
    root.execute(f"CREATE ROLE {ADMIN} LOGIN CREATEROLE")
    root.execute(f"GRANT CREATE ON DATABASE {urlsplit(pg_dsn).path[1:]} TO {ADMIN}")
    admin = psycopg.connect(as_role(pg_dsn, ADMIN), autocommit=True)
    try:
        yield admin
    finally:
        admin.close()
        for role in (APP, OWNER, ADMIN):
            _drop(root, role)
        root.close()


def test_the_owner_sql_needs_the_membership_as_a_non_superuser(
    administrator: psycopg.Connection[Any],
) -> None:
    assert administrator.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")\
        .fetchone() == (False,)  # fmt: skip
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be member of role"):
        with administrator.transaction():
            administrator.execute(WITHOUT_MEMBERSHIP)
    administrator.execute(ADMIN_OWNER_SQL)  # with it: as a superuser would


def test_grants_cover_the_tables_a_later_migration_adds(
    administrator: psycopg.Connection[Any], pg_dsn: str
) -> None:
    administrator.execute(ADMIN_OWNER_SQL)
    owner, app = as_role(pg_dsn, OWNER), as_role(pg_dsn, APP)
    assert run_cli(["tick", "--db", owner, *API]).returncode == 0
    administrator.execute(f"CREATE ROLE {APP} LOGIN PASSWORD 'change me too'")

    printed = run_cli(["grants", "--db", owner, "--role", APP])
    assert printed.returncode == 0, printed.stderr
    assert "ALTER DEFAULT PRIVILEGES FOR ROLE" in printed.stdout
    applied = run_cli(["grants", "--db", owner, "--role", APP, "--apply"])
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == printed.stdout
    assert run_cli(["grants", "--db", app, "--role", APP, "--apply"]).returncode == 4

    done = run_cli(["tick", "--db", app, *API])
    assert done.returncode == 0, done.stderr
    assert "process registry" not in done.stderr  # its rights on `processes` too
    # A table a later migration of the owner's adds is the app role's at once.
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("CREATE TABLE reclaim_tui.later (id BIGINT GENERATED ALWAYS AS IDENTITY)")
    with psycopg.connect(app, autocommit=True) as conn:
        conn.execute("INSERT INTO reclaim_tui.later DEFAULT VALUES")
        assert conn.execute("SELECT count(*) FROM reclaim_tui.later").fetchone() == (1,)
