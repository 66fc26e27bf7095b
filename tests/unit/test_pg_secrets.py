"""Issue 23, point 3: a PostgreSQL password never shows, whatever it holds.

Every command that takes `--db` runs through the real CLI with a URL (and a
libpq keyword DSN) whose password holds the characters that broke it —
`% / # @ : ? = space '` and non-ASCII — against a closed port and against
the tests' real server; neither stdout, stderr nor any file the command
created holds the password or a piece of it. A keyword DSN is a server's
database, never a SQLite file named after it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from reclaim_tui.cli import cli
from reclaim_tui.core.ledger.urls import is_database_url, shown_db

SPECIALS = ["%", "/", "#", "@", ":", "?", "=", " ", "'", "%zz", "%41", "\\", "&", "é", "€"]
#: Password pieces are runs of letters no message of the CLI holds by chance.
PIECE = st.text(alphabet="QXZJKWqxzjkwÆßŒ", min_size=4, max_size=7)


@st.composite
def passwords(draw: st.DrawFn) -> tuple[str, list[str]]:
    pieces = draw(st.lists(PIECE, min_size=2, max_size=4))
    seps = draw(st.lists(st.sampled_from(SPECIALS), min_size=len(pieces) - 1,
                         max_size=len(pieces) - 1))  # fmt: skip
    text = pieces[0] + "".join(s + p for s, p in zip(seps, pieces[1:], strict=True))
    return text, pieces


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # nobody listens on it once the socket is closed


def _dsns(password: str, host: str, port: int, user: str, db: str) -> list[str]:
    """The forms a user writes: a raw URL, an encoded URL, a keyword DSN."""
    quoted = "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return [
        f"postgresql://{user}:{password}@{host}:{port}/{db}",
        f"postgres://{user}:{quote(password, safe='')}@{host}:{port}/{db}?sslmode=disable",
        f"host={host} port={port} dbname={db} user={user} password={quoted}",
    ]


def _commands(db: str, tmp: Path) -> list[list[str]]:
    jobs = tmp / "jobs.jsonl"
    jobs.write_text('{"input": "hello", "model": "m"}\n')
    sqlite = str(tmp / "other.db")
    key = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]
    return [
        ["status", "--db", db],
        ["tick", "--db", db, *key],
        ["run", "--once", "--db", db, *key],
        ["submit", str(jobs), "--db", db, *key],
        ["show", "k", "--db", db],
        ["export", "--db", db],
        ["costs", "--db", db],
        ["prune", "--older-than", "1d", "--db", db],
        ["recover", "--db", db, *key],
        ["replay", "--db", db],
        ["retry", "k", "--db", db],
        ["cancel", "k", "--db", db, *key],
        ["adopt", "k", "v1_x", "--db", db, *key],
        ["answer", "k", "yes", "--db", db, *key],
        ["migrate", "--from", db, "--to", sqlite],
        ["migrate", "--from", sqlite, "--to", db],
        ["migrate", "--check", "--from", db, "--to", sqlite],
    ]


def _leaks(text: str, password: str, pieces: list[str]) -> list[str]:
    forms = {password, quote(password, safe=""), *pieces}
    return sorted(f for f in forms if f in text)


def _files_leak(root: Path, password: str, pieces: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        leaks = _leaks(str(path.relative_to(root)), password, pieces)
        if path.is_file():
            leaks += _leaks(path.read_bytes().decode("utf-8", "replace"), password, pieces)
        if leaks:
            found.append(f"{path}: {leaks}")
    return found


# No shrinking: an example runs every command three times (seconds), and a
# failure names its password and command already.
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate),
)
@given(secret=passwords())
@example(secret=("QXZJ%zz/KWqx@zjkw#Æßqx", ["QXZJ", "KWqx", "zjkw", "Æßqx"]))
def test_no_command_shows_the_password(
    secret: tuple[str, list[str]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    password, pieces = secret
    tmp = tmp_path_factory.mktemp("secret")
    port = _closed_port()
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        for db in _dsns(password, "127.0.0.1", port, "reclaim", "ledger"):
            assert is_database_url(db), db
            assert not _leaks(shown_db(db), password, pieces)
            for args in _commands(db, tmp):
                result = runner.invoke(cli, args, env={"GEMINI_API_KEY": None})
                out = result.stdout + result.stderr
                assert not _leaks(out, password, pieces), (args[0], out)
                # Refused clearly (2) or the server cannot be reached (4):
                # never a SQLite ledger made of the text.
                assert result.exit_code in (2, 4), (args, result.exit_code, out)
        assert not _files_leak(tmp, password, pieces)
    finally:
        os.chdir(cwd)


def test_every_url_form_reads_the_password_as_written() -> None:
    """A raw `/`, `#`, `@`, `?`, `%` in the password is the password's (libpq
    took `/` and `@` as the host's, and echoed a raw `%` in an error)."""
    from reclaim_tui.core.ledger.urls import pg_params

    for password in ["a/b", "a#b", "a@b", "a?b", "a%zzb", "a b", "ä:=&'\\"]:
        raw = _dsns(password, "db.example", 6432, "me", "ledger")[0]
        for db in (raw, f"postgresql://me:{quote(password, safe='')}@db.example:6432/ledger"):
            params = pg_params(db)
            assert params == {
                "user": "me",
                "password": password,
                "host": "db.example",
                "port": "6432",
                "dbname": "ledger",
            }, db
    keyword = _dsns("it's a\\ b", "h", 5432, "me", "d")[2]
    assert pg_params(keyword)["password"] == "it's a\\ b"
    assert pg_params("postgresql://[::1]:5433,h2/d?sslmode=require&options=-c%20x%3Dy") == {
        "host": "::1,h2",
        "port": "5433,",
        "dbname": "d",
        "sslmode": "require",
        "options": "-c x=y",
    }


def test_keyword_dsn_is_a_server_not_a_file(tmp_path: Path) -> None:
    """`tick --db 'host=… password=…'` created a SQLite file named with the
    password in the current folder, and exited 0."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    env.pop("GEMINI_API_KEY", None)
    db = f"host=127.0.0.1 port={_closed_port()} dbname=x user=u password=QXZJsecretKWq"
    for args in (["status"], ["tick", "--api-key", "k"], ["console", "--readonly"], ["demo"]):
        done = subprocess.run(
            [sys.executable, "-m", "reclaim_tui", *args, "--db", db],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        out = done.stdout + done.stderr
        assert "QXZJsecretKWq" not in out, (args, out)
        assert done.returncode != 0, (args, out)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("form", [0, 1, 2])
def test_real_server_every_form_works_and_hides_the_password(
    pg_dsn: str, tmp_path: Path, form: int
) -> None:
    """On the tests' real server, with a role whose password holds every
    special character: the ledger is created and used, and no output or file
    shows the password."""
    import psycopg

    password, pieces = "QXZJ%zz/Kw#qx@zj:Wk?Æß= 'Œqx%41", ["QXZJ", "qx@zj", "Œqx"]
    # A role of this test's own: roles are the server's, not the database's,
    # and the previous form's database (owned by its role) may still be
    # being dropped by the test pool when this one starts.
    role = f"secretive_{form}_{os.getpid()}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                psycopg.sql.Identifier(role), password
            )
        )
    parts = urlsplit(pg_dsn)
    db = _dsns(password, parts.hostname or "", parts.port or 0, role, parts.path[1:])[form]
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for args in _commands(db, tmp_path):
            result = runner.invoke(cli, args, env={"GEMINI_API_KEY": None})
            out = result.stdout + result.stderr
            assert not _leaks(out, password, pieces), (args[0], out)
        status = runner.invoke(cli, ["status", "--db", db])
        assert status.exit_code == 0, status.output
        assert not _files_leak(tmp_path, password, pieces)
    finally:
        os.chdir(cwd)
