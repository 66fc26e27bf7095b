"""`migrate` and the PostgreSQL schema (issue 33, 8): it had no `--schema`
(the README lists it among the common flags) and could not name a schema
per side; its summary did not name the schema. Now `--schema` names both
sides', `--from-schema`/`--to-schema` each side's, and the summary (and
--json) names the schema of each PostgreSQL side."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.postgres

API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]


def jobs(conn: psycopg.Connection[object], schema: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {schema}.jobs").fetchone()
    assert row is not None
    return int(row[0])


def test_migrate_takes_a_schema_per_side_and_names_it(pg_dsn: str, tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    spec = tmp_path / "jobs.jsonl"
    spec.write_text("".join(json.dumps({"input": f"schema {i}"}) + "\n" for i in range(3)))
    reserved = run_cli(["submit", "--no-send", str(spec), "--db", str(source)])
    assert reserved.returncode == 0, reserved.stderr

    first = run_cli(["migrate", "--from", str(source), "--to", pg_dsn, "--schema", "first"])
    assert first.returncode == 0, first.stderr
    assert f"{pg_dsn} (schema first) holds every row of {source}" in first.stdout

    # PostgreSQL to PostgreSQL, in the same database: a schema each.
    moved = run_cli(
        ["migrate", "--json", "--from", pg_dsn, "--from-schema", "first",
         "--to", pg_dsn, "--to-schema", "second"]
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    said = json.loads(moved.stdout)
    assert (said["source"], said["target"]) == (
        f"{pg_dsn} (schema first)",
        f"{pg_dsn} (schema second)",
    )
    with psycopg.connect(pg_dsn) as conn:
        assert (jobs(conn, "first"), jobs(conn, "second")) == (3, 3)
        assert conn.execute("SELECT to_regclass('reclaim_tui.jobs')").fetchone() == (None,)
    same = run_cli(["migrate", "--from", pg_dsn, "--to", pg_dsn, "--schema", "first"])
    assert same.returncode == 2 and "the same ledger" in same.stderr
