"""A ledger's password kept off the command line (issue 33, 10): `--db
postgresql://user:secret@…` is in `ps` and /proc/PID/cmdline for every
local user to read. `--db-file` (env RECLAIM_DB_FILE) reads `--db` from a
file; libpq's own ways work too and each is tried here against a real
PgBouncer that asks for a password (md5): PGPASSFILE, PGPASSWORD and a
connection service file (PGSERVICEFILE, `--db service=NAME`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.helpers import clean_env, run_cli
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer

pytestmark = pytest.mark.postgres

SECRET = "s3cret: @/#%?=&'\" \\ é"
API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]


@pytest.fixture
def bouncer(pg_server: PostgresServer) -> Iterator[PgBouncer]:
    with started_bouncer(PgBouncer(pg_server, auth="md5", password=SECRET)) as b:
        yield b


def private(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def without_password(bouncer: PgBouncer, pg_dsn: str) -> str:
    name = urlsplit(pg_dsn).path[1:]
    return f"postgresql://postgres@127.0.0.1:{bouncer.port}/{name}"


def tick(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(["tick", *args, *API], env=clean_env(env))


def test_db_file_keeps_the_password_out_of_the_command_line(
    bouncer: PgBouncer, pg_dsn: str, tmp_path: Path
) -> None:
    quoted = SECRET.replace("%", "%25").replace("@", "%40").replace("/", "%2F")
    url = without_password(bouncer, pg_dsn).replace("postgres@", f"postgres:{quoted}@")
    db_file = private(tmp_path / "db", url + "\n")
    log = tmp_path / "run.log"
    argv = [sys.executable, "-m", "reclaim_tui", "run", "--db-file", str(db_file), *API]
    argv += ["--log", str(log), "--idle-sleep", "0.5"]
    proc = subprocess.Popen(argv, env=clean_env(), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and '"ready"' in log.read_text()):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.1)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "s3cret" not in cmdline and str(db_file) in cmdline
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    ready = next(json.loads(x) for x in log.read_text().splitlines() if '"ready"' in x)
    assert "s3cret" not in ready["db"]
    assert tick(RECLAIM_DB_FILE=str(db_file)).returncode == 0


def test_libpq_password_file_password_env_and_service_file(
    bouncer: PgBouncer, pg_dsn: str, tmp_path: Path
) -> None:
    url = without_password(bouncer, pg_dsn)
    refused = tick("--db", url)
    assert refused.returncode == 4 and "a password" in refused.stderr, refused.stderr
    escaped = SECRET.replace("\\", "\\\\").replace(":", "\\:")
    passfile = private(tmp_path / "pgpass", f"127.0.0.1:{bouncer.port}:*:postgres:{escaped}\n")
    done = tick("--db", url, PGPASSFILE=str(passfile))
    assert done.returncode == 0, done.stderr
    done = tick("--db", url, PGPASSWORD=SECRET)
    assert done.returncode == 0, done.stderr
    name = urlsplit(pg_dsn).path[1:]
    service = private(
        tmp_path / "pg_service.conf",
        f"[ledger]\nhost=127.0.0.1\nport={bouncer.port}\nuser=postgres\ndbname={name}\n"
        f"passfile={passfile}\n",
    )
    done = tick("--db", "service=ledger", PGSERVICEFILE=str(service))
    assert done.returncode == 0, done.stderr
