"""Issue 23, point 4: a ledger made by each shipped schema version is upgraded.

tests/fixtures/ledgers/ holds one SQL dump per shipped schema version (and per
shipped edit of one), each made by the commit that shipped it (make.py says
how; each file's first line names its commit). Each is restored, opened by
this code, and must come out at the current schema: the console filter works
on it and matches exactly what it matches on a fresh ledger given the same
rows.

PostgreSQL: main's migration 1 was edited after it shipped (spec/last_error
collation, reclaim_input PARALLEL SAFE → UNSAFE), and main took such ledgers
as current; under a parallel plan the filter failed with "cannot start
subtransactions during a parallel operation", and on a database whose locale
folds non-ASCII case it matched CAFÉ for café. The old ledgers are restored
into a database of locale C.utf8 with parallel plans forced.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from reclaim_tui.core.ledger.console.text_search import TEXT_SQL, like_pattern
from reclaim_tui.core.ledger.opening import open_ledger
from tests.helpers.postgres import PostgresServer, find_bin_dir

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
ROWS = [
    ("k-cafe-1", json.dumps({"input": "un café au lait", "model": "m"}), "m"),
    ("k-cafe-2", json.dumps({"input": "UN CAFÉ AU LAIT", "model": "m"}), "m"),
    ("k-cafe-3", json.dumps({"input": "Cafe latte", "model": "m"}), "m"),
    ("k-tea", json.dumps({"input": "green tea", "model": "m"}), "m"),
    ("k-broken", "not json {café", "m"),
]
NEEDLES = ["café", "CAFÉ", "cafe", "CAFE", "lait", "tea", "k-cafe", "json", "é"]


def fixtures(engine: str) -> list[Path]:
    found = sorted(FIXTURES.glob(f"{engine}-v*.sql"))
    assert found, f"no {engine} fixtures in {FIXTURES}"
    return found


async def _filtered(db: str) -> dict[str, list[str]]:
    """What the console's text filter matches, needle by needle."""
    ledger = await open_ledger(db)
    try:
        out = {}
        for needle in NEEDLES:
            pattern = like_pattern(needle)
            rows = await ledger.select(
                "SELECT idem FROM jobs WHERE " + TEXT_SQL + " ORDER BY idem", [pattern] * 3
            )
            out[needle] = [r[0] for r in rows]
        return out
    finally:
        await ledger.close()


async def _fresh(db: str) -> dict[str, list[str]]:
    ledger = await open_ledger(db)
    try:
        await ledger.insert_jobs(ROWS, "fixture")
    finally:
        await ledger.close()
    return await _filtered(db)


@pytest.mark.parametrize("dump", fixtures("sqlite"), ids=lambda p: p.stem)
def test_sqlite_ledger_of_each_shipped_schema_is_upgraded(dump: Path, tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.executescript(dump.read_text())
    conn.close()
    got = asyncio.run(_filtered(str(old)))
    want = asyncio.run(_fresh(str(tmp_path / "fresh.db")))
    assert got == want
    assert _shape(old) == _shape(tmp_path / "fresh.db")
    check = sqlite3.connect(old)
    assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert check.execute("PRAGMA foreign_key_check").fetchall() == []
    # Every row kept, its events and results still hang off it.
    assert check.execute("SELECT count(*) FROM jobs").fetchone()[0] == len(ROWS)
    orphaned = check.execute(
        "SELECT count(*) FROM events e LEFT JOIN jobs j ON j.id = e.job WHERE j.idem IS NOT e.idem"
    ).fetchone()[0]
    assert orphaned == 0
    assert check.execute("SELECT count(*) FROM events").fetchone()[0] == len(ROWS)
    check.close()


def _shape(path: Path) -> tuple[object, ...]:
    """The version, every table's columns and every index and trigger."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )]  # fmt: skip
        columns = {t: conn.execute(f'PRAGMA table_info("{t}")').fetchall() for t in tables}
        others = conn.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('index', 'trigger',"
            " 'view') ORDER BY type, name"
        ).fetchall()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        return version, columns, others
    finally:
        conn.close()


def _database(server: PostgresServer, name: str, *, locale: str | None = None) -> str:
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if locale:
            query = sql.SQL("CREATE DATABASE {} TEMPLATE template0 LOCALE {}").format(
                sql.Identifier(name), sql.Literal(locale)
            )
        conn.execute(query)
        # Parallel plans wherever possible: a function wrongly declared
        # PARALLEL SAFE runs in a worker even on a few rows.
        for setting in (
            "force_parallel_mode = on",
            "parallel_setup_cost = 0",
            "parallel_tuple_cost = 0",
            "min_parallel_table_scan_size = 0",
        ):
            conn.execute(sql.SQL("ALTER DATABASE {} SET " + setting).format(sql.Identifier(name)))
    return server.dsn(name)


@pytest.mark.parametrize("dump", fixtures("postgres"), ids=lambda p: p.stem)
def test_postgres_ledger_of_each_shipped_schema_is_upgraded(
    dump: Path, pg_server: PostgresServer
) -> None:
    stem = dump.stem.replace("-", "_")
    old = _database(pg_server, f"old_{stem}", locale="C.utf8")
    fresh = _database(pg_server, f"fresh_{stem}", locale="C.utf8")
    try:
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), old],
            check=True,
            capture_output=True,
        )
        got = asyncio.run(_filtered(old))
        want = asyncio.run(_fresh(fresh))
        assert got == want
        assert want["café"] == ["k-cafe-1"]  # ASCII-only case folding, as SQLite's LIKE
        with psycopg.connect(old) as conn:
            collations = conn.execute(
                "SELECT column_name, collation_name FROM information_schema.columns"
                " WHERE table_schema = 'reclaim_tui' AND table_name = 'jobs'"
                " AND column_name IN ('spec', 'last_error') ORDER BY 1"
            ).fetchall()
            assert collations == [("last_error", "C"), ("spec", "C")]
            parallel = conn.execute(
                "SELECT proparallel FROM pg_proc WHERE proname = 'reclaim_input'"
            ).fetchall()
            assert parallel == [("u",)]
    finally:
        for name in (old, fresh):
            pg_server.drop_database(urlsplit(name).path[1:])
