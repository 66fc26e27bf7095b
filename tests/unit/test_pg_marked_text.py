"""Text starting with U+FDD0 (the mark of core/ledger/postgres/text.py's NUL
encoding) stored by a version before that encoding: after the upgrade it
reads back as it was written, no row fails a read, and it crosses `migrate`
both ways unchanged, `--check` agreeing (issue 40 point 7)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from reclaim_tui.cli import cli
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA_VERSION
from reclaim_tui.core.ledger.postgres.text import MARK, decode, encode
from tests.helpers.postgres import PostgresServer, find_bin_dir

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ledgers" / "postgres-v1-c5afcac.sql"
#: What the attack stored: one read back changed, one that failed every read.
TEXTS = {
    "k-quoted": MARK + '"hello"',
    "k-plain": MARK + "hello",
    "k-mark-only": MARK,
    "k-two": MARK + MARK + "x",
    "k-json-array": MARK + "[1, 2]",
    "k-escaped": MARK + '"a\\u00e9"',
}


def _database(server: PostgresServer, name: str) -> str:
    with psycopg.connect(server.dsn("postgres"), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return server.dsn(name)


def _old_rows(dsn: str) -> None:
    """Rows as the code before the encoding wrote them: every text as it is."""
    with psycopg.connect(dsn) as conn:
        for n, (key, text) in enumerate(TEXTS.items()):
            spec = json.dumps({"input": text, "model": "m"}, ensure_ascii=False)
            job = conn.execute(
                "INSERT INTO reclaim_tui.jobs(idem, spec, model, status, last_error, created_at,"
                " state_since, updated_at) VALUES (%s, %s, 'm', 'done', %s, %s, %s, %s)"
                " RETURNING id",
                (key, spec, text, 1e9 + n, 1e9 + n, 1e9 + n),
            ).fetchone()
            assert job is not None
            conn.execute(
                "INSERT INTO reclaim_tui.results(job, idem, interaction_id, output_text, usage,"
                " raw_json, stored_at) VALUES (%s, %s, %s, %s, NULL, '{}', %s)",
                (job[0], key, f"i-{key}", text, 1e9 + n),
            )
            conn.execute(
                "INSERT INTO reclaim_tui.events(at, job, idem, actor, from_status, to_status, note)"
                " VALUES (%s, %s, %s, 'old', NULL, 'done', %s)",
                (1e9 + n, job[0], key, text),
            )


async def _read(db: str) -> dict[str, tuple[str, str | None, str]]:
    """Per key: (the result's text, the last error, the last event's note)."""
    ledger = await open_ledger(db)
    try:
        out = {}
        for key in TEXTS:
            row, result = await ledger.get(key), await ledger.result(key)
            assert row is not None and result is not None, key
            out[key] = (result.output_text, row.last_error, (await ledger.events(key))[-1].note)
        return out
    finally:
        await ledger.close()


def test_decode_reads_text_it_did_not_encode_as_it_is() -> None:
    for text in TEXTS.values():
        assert decode(text) == text
        assert decode(encode(text)) == text
    assert decode(encode("a\u0000b")) == "a\u0000b"
    assert decode(MARK + json.dumps("plain")) == MARK + '"plain"'  # no encoding of it


@pytest.mark.postgres
def test_marked_text_from_before_the_encoding_survives_the_upgrade_and_migrate(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    old = _database(pg_server, "marked_old")
    again = _database(pg_server, "marked_again")
    try:
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(FIXTURE), old],
            check=True,
            capture_output=True,
        )
        _old_rows(old)
        want = {key: (text, text, text) for key, text in TEXTS.items()}
        assert asyncio.run(_read(old)) == want  # migrated at this open
        with psycopg.connect(old) as conn:  # every stored text with the mark is an encoding
            stored = [r[0] for r in conn.execute("SELECT output_text FROM reclaim_tui.results")]
            version = conn.execute("SELECT value FROM reclaim_tui.meta").fetchone()
        assert version == (str(PG_SCHEMA_VERSION),)
        assert all(s.startswith(MARK + '"') and decode(s) != s for s in stored)
        file = str(tmp_path / "copy.db")
        for source, target in ((old, file), (file, again)):
            moved = CliRunner().invoke(cli, ["migrate", "--from", source, "--to", target])
            assert moved.exit_code == 0, moved.output
            checked = CliRunner().invoke(
                cli, ["migrate", "--from", source, "--to", target, "--check"]
            )
            assert checked.exit_code == 0, checked.output
            assert asyncio.run(_read(target)) == want
        with sqlite3.connect(file) as conn:
            rows = dict(conn.execute("SELECT idem, output_text FROM results").fetchall())
        assert rows == TEXTS  # SQLite holds the text itself
    finally:
        for name in (old, again):
            pg_server.drop_database(urlsplit(name).path[1:])
