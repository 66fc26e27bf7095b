"""Issue 23, point 2: PostgreSQL with least-privilege roles, on the tests' server.

An owner role that has CONNECT and its own schema (created by an
administrator) but no CREATE on the database starts a ledger; a DML-only
role works it; the schema is the user's choice (`--schema`, the URL's
search_path, PGOPTIONS) and a given search_path is kept; pg_trgm installed
in another schema (`extensions`) gives the text indexes, found again once it
is installed later, and a missing index is said; a refused right names the
statement and the grant; `migrate` into a role that may not move sequences
refuses up front, and `migrate --check` sees a sequence left behind. The
roles' SQL is docs/postgresql.md's: a test checks the page shows what they run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from click.testing import CliRunner, Result

from reclaim_tui.cli import cli
from reclaim_tui.core.ledger.postgres.schema import PG_TEXT_INDEX_NAMES

pytestmark = pytest.mark.postgres

DOC = Path(__file__).parents[2] / "docs" / "postgresql.md"
ROLES = ("reclaim_owner", "reclaim_app", "reclaim_app2", "owner_mine")
API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]


#: The roles' SQL, as docs/postgresql.md shows it (a test checks the page
#: holds exactly this).
OWNER_SQL = """\
-- owner role: as an administrator (CREATEROLE; superuser not needed), in the ledger's database
CREATE ROLE reclaim_owner LOGIN PASSWORD 'change me';
GRANT reclaim_owner TO CURRENT_USER;  -- a non-superuser may give a schema only to a role it is in
CREATE SCHEMA reclaim_tui AUTHORIZATION reclaim_owner;
-- optional, for the console filter's trigram indexes (any schema will do):
CREATE SCHEMA IF NOT EXISTS extensions;
CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA extensions;
GRANT USAGE ON SCHEMA extensions TO reclaim_owner;
"""
DML_SQL = """\
-- DML-only role: as an administrator, after the owner's first command
CREATE ROLE reclaim_app LOGIN PASSWORD 'change me too';
GRANT USAGE ON SCHEMA reclaim_tui TO reclaim_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reclaim_tui TO reclaim_app;
GRANT SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA reclaim_tui TO reclaim_app;
"""


def doc_sql(first_line: str) -> str:
    """The ```sql block of docs/postgresql.md whose first line is `first_line`."""
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"{DOC.name} has no single ```sql block starting {first_line!r}"
    return found[0]


def as_role(dsn: str, role: str, query: str = "") -> str:
    parts = urlsplit(dsn)
    netloc = f"{role}@{parts.hostname}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


@pytest.fixture
def admin(pg_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """The superuser's connection to the test's database; the roles made on
    the (shared) server are dropped afterwards."""
    conn = psycopg.connect(pg_dsn, autocommit=True)
    for role in ROLES:
        _drop_role(conn, role)
    try:
        yield conn
    finally:
        for role in ROLES:
            _drop_role(conn, role)
        conn.close()


def _drop_role(conn: psycopg.Connection[Any], role: str) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists:
        conn.execute(f"DROP OWNED BY {role} CASCADE")
        conn.execute(f"DROP ROLE {role}")


def cli_run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"RECLAIM_PG_SCHEMA": None, "PGOPTIONS": None})


def jobs_file(tmp_path: Path, n: int = 3) -> str:
    path = tmp_path / "jobs.jsonl"
    path.write_text("".join(json.dumps({"input": f"role test {i}"}) + "\n" for i in range(n)))
    return str(path)


def may_create(admin: psycopg.Connection[Any], role: str) -> None:
    """Give `role` the database's CREATE too: the test then checks its own
    point, not again the start without it (the first test's)."""
    admin.execute(f"GRANT CREATE ON DATABASE {admin.info.dbname} TO {role}")


def owner_setup(admin: psycopg.Connection[Any]) -> None:
    admin.execute(OWNER_SQL)


def test_the_manual_shows_the_sql_these_tests_run() -> None:
    assert doc_sql("-- owner role:") == OWNER_SQL
    assert doc_sql("-- DML-only role:") == DML_SQL


def test_owner_role_without_database_create_starts_in_its_schema(
    admin: psycopg.Connection[Any], pg_dsn: str
) -> None:
    """`CREATE SCHEMA IF NOT EXISTS` checked the database's CREATE right even
    with the schema there: the owner role could never start."""
    owner_setup(admin)
    assert not admin.execute(
        "SELECT has_database_privilege('reclaim_owner', current_database(), 'CREATE')"
    ).fetchone()[0]  # type: ignore[index]
    done = cli_run("tick", "--db", as_role(pg_dsn, "reclaim_owner"), *API)
    assert done.exit_code == 0, done.output
    owners = admin.execute(
        "SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = 'reclaim_tui'"
    ).fetchall()
    assert owners == [("reclaim_owner",)]
    # pg_trgm lives in `extensions`: the indexes use its operator class there.
    defs = [r[0] for r in admin.execute(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = 'reclaim_tui'"
        " AND indexname LIKE '%trgm'"
    ).fetchall()]  # fmt: skip
    assert len(defs) == len(PG_TEXT_INDEX_NAMES), defs
    assert all("extensions.gin_trgm_ops" in d for d in defs), defs
    status = cli_run("status", "--db", as_role(pg_dsn, "reclaim_owner"))
    assert status.exit_code == 0 and "trigram" not in status.stderr, status.output


def test_dml_role_from_the_readme_works_and_refusals_name_the_grant(
    admin: psycopg.Connection[Any], pg_dsn: str, tmp_path: Path
) -> None:
    owner_setup(admin)
    may_create(admin, "reclaim_owner")
    assert cli_run("tick", "--db", as_role(pg_dsn, "reclaim_owner"), *API).exit_code == 0
    admin.execute(DML_SQL)
    app = as_role(pg_dsn, "reclaim_app")
    cli_run("submit", jobs_file(tmp_path), "--db", app, *API)
    status = cli_run("status", "--json", "--db", app)
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["reserving"]["count"] == 3
    # A role granted the jobs but not the events: exit 4, naming the
    # statement and the grant it needs (it said only "the ledger cannot be
    # written (permission denied for table events)").
    admin.execute("CREATE ROLE reclaim_app2 LOGIN")
    admin.execute("GRANT USAGE ON SCHEMA reclaim_tui TO reclaim_app2")
    admin.execute(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON reclaim_tui.jobs, reclaim_tui.meta TO reclaim_app2"
    )
    (tmp_path / "more").mkdir()
    refused = cli_run(
        "submit", jobs_file(tmp_path / "more", 4), "--db", as_role(pg_dsn, "reclaim_app2"), *API
    )
    assert refused.exit_code == 4, refused.output
    assert 'the role "reclaim_app2" lacks a right for: INSERT INTO events' in refused.stderr
    assert (
        'it needs GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE events TO "reclaim_app2"'
        in refused.stderr
    )


def test_migrate_into_a_role_that_cannot_move_sequences_refuses_up_front(
    admin: psycopg.Connection[Any], pg_dsn: str, tmp_path: Path
) -> None:
    """It copied every row, then exited 4 on `permission denied for sequence
    jobs_id_seq`; `--check` then said 0 and the next tick hit a duplicate key."""
    source = str(tmp_path / "source.db")
    cli_run("submit", jobs_file(tmp_path), "--db", source, *API)  # reserved; the API is away
    owner_setup(admin)
    may_create(admin, "reclaim_owner")
    assert cli_run("tick", "--db", as_role(pg_dsn, "reclaim_owner"), *API).exit_code == 0
    admin.execute("CREATE ROLE reclaim_app2 LOGIN")
    admin.execute("GRANT USAGE ON SCHEMA reclaim_tui TO reclaim_app2")
    admin.execute(
        "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA reclaim_tui TO reclaim_app2"
    )
    admin.execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA reclaim_tui TO reclaim_app2")
    target = as_role(pg_dsn, "reclaim_app2")
    refused = cli_run("migrate", "--from", source, "--to", target)
    assert refused.exit_code == 4, refused.output
    assert "GRANT UPDATE ON SEQUENCE reclaim_tui.jobs_id_seq" in refused.stderr
    assert "nothing was copied" in refused.stderr
    count = admin.execute("SELECT count(*) FROM reclaim_tui.jobs").fetchone()
    assert count == (0,)
    # With the manual's DML grants migrate copies and moves the sequences;
    # a sequence set back by hand is what --check now finds.
    admin.execute(DML_SQL)
    app = as_role(pg_dsn, "reclaim_app")
    copied = cli_run("migrate", "--from", source, "--to", app)
    assert copied.exit_code == 0, copied.output
    assert cli_run("migrate", "--check", "--from", source, "--to", app).exit_code == 0
    admin.execute("SELECT setval('reclaim_tui.jobs_id_seq', 1, false)")
    check = cli_run("migrate", "--check", "--json", "--from", source, "--to", app)
    assert check.exit_code == 1, check.output
    behind = json.loads(check.stdout)["sequences_behind"]
    assert len(behind) == 1 and behind[0].startswith("reclaim_tui.jobs_id_seq: next id 1"), behind


def test_the_schema_is_the_users_choice(
    admin: psycopg.Connection[Any], pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema was fixed (`reclaim_tui`) and a given search_path was
    overwritten. Precedence: --schema, then the URL's search_path (libpq's
    `options` over PGOPTIONS), then reclaim_tui."""
    admin.execute("CREATE ROLE owner_mine LOGIN")
    may_create(admin, "owner_mine")
    for schema in ("mine", "theirs", "flagged", "extensions"):
        admin.execute(f"CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION owner_mine")
    base = as_role(pg_dsn, "owner_mine")
    url = as_role(pg_dsn, "owner_mine", "options=-csearch_path%3Dmine,extensions")
    assert cli_run("tick", "--db", url, *API).exit_code == 0
    mine = admin.execute("SELECT to_regclass('mine.jobs') IS NOT NULL").fetchone()
    assert mine == (True,)  # it went to reclaim_tui, the path overwritten
    assert cli_run("tick", "--db", url, "--schema", "flagged", *API).exit_code == 0
    monkeypatch.setenv("PGOPTIONS", "-c search_path=theirs")
    assert CliRunner().invoke(cli, ["tick", "--db", base, *API]).exit_code == 0
    tables = {
        r[0] for r in admin.execute("SELECT schemaname FROM pg_tables WHERE tablename = 'jobs'")
    }
    assert tables == {"mine", "flagged", "theirs"}
    monkeypatch.delenv("PGOPTIONS")
    import asyncio

    from reclaim_tui.core.ledger.opening import open_ledger

    async def path() -> Any:
        ledger = await open_ledger(url, readonly=True, create=False)
        try:
            return (await ledger.select("SHOW search_path"))[0][0]
        finally:
            await ledger.close()

    # Set per transaction (SET LOCAL: a pooler must not carry it to another
    # client), which PostgreSQL shows with the quotes it does not need dropped.
    assert asyncio.run(path()) == "mine, extensions"


def test_pg_trgm_installed_later_is_found_and_a_missing_index_is_said(
    admin: psycopg.Connection[Any], pg_dsn: str
) -> None:
    """No pg_trgm when the ledger was made: creation was never tried again,
    and nothing said the filter had no index."""
    admin.execute("CREATE ROLE reclaim_owner LOGIN")
    admin.execute("CREATE SCHEMA reclaim_tui AUTHORIZATION reclaim_owner")
    owner = as_role(pg_dsn, "reclaim_owner")
    assert cli_run("tick", "--db", owner, *API).exit_code == 0  # may not CREATE EXTENSION
    status = cli_run("status", "--db", owner)
    assert status.exit_code == 0
    assert "note: no trigram index for the text filter" in status.stderr
    admin.execute("CREATE SCHEMA extensions")
    admin.execute("CREATE EXTENSION pg_trgm SCHEMA extensions")
    status = cli_run("status", "--db", owner)
    assert 'GRANT USAGE ON SCHEMA "extensions" TO "reclaim_owner"' in status.stderr
    admin.execute("GRANT USAGE ON SCHEMA extensions TO reclaim_owner")
    assert cli_run("tick", "--db", owner, *API).exit_code == 0
    count = admin.execute(
        "SELECT count(*) FROM pg_indexes WHERE schemaname = 'reclaim_tui'"
        " AND indexdef LIKE '%extensions.gin_trgm_ops%'"
    ).fetchone()
    assert count == (len(PG_TEXT_INDEX_NAMES),)
    status = cli_run("status", "--db", owner)
    assert status.exit_code == 0 and "trigram" not in status.stderr, status.output


def test_a_role_without_a_right_on_the_registry_still_works(
    admin: psycopg.Connection[Any], pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 25's process registry is a table of its own: a DML role granted
    before it existed (the manual's grant, run before an upgrade) still
    ticks; its process is not registered, and a warning names the grant."""
    owner_setup(admin)
    may_create(admin, "reclaim_owner")
    assert cli_run("tick", "--db", as_role(pg_dsn, "reclaim_owner"), *API).exit_code == 0
    admin.execute(DML_SQL)
    admin.execute("REVOKE ALL ON reclaim_tui.processes FROM reclaim_app")
    done = cli_run("tick", "--db", as_role(pg_dsn, "reclaim_app"), *API)
    assert done.exit_code == 0, done.output
    warned = caplog.text  # a warning on stderr, where no logging is configured
    assert "process registry: tick not written" in warned
    assert "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE processes" in warned
    registered = admin.execute("SELECT kind, state FROM reclaim_tui.processes").fetchall()
    assert registered == [("tick", "stopped")]  # the owner's tick only
