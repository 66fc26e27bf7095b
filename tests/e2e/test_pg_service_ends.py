"""How a `run` service on PostgreSQL ends, or does not (issue 33, 3 and 6).

- A grant revoked mid-run ended every service (exit 4), and `--log`'s last
  line was an idle pass: the reason was only on stderr. A right refused
  mid-run is now waited for (an administrator's change is often undone; a
  service restarted by systemd would meet the same refusal) and said at
  every wait; once granted again the jobs get done.
- Whatever ends a service, its log's last line is `stopped` with the exit
  code, the error and a hint.
- A wrong password or a missing CA file (sslrootcert) looped for ever as
  `ledger_unavailable "starting": true`; they now exit 4 at once with the
  reason (a server not up yet is still waited for: test_pg_startup.py).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.helpers import Workspace, run_cli
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer, started
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.postgres

OWNER, APP = "svc_owner", "svc_app"
API = ["--api-key", "test-key", "--base-url", "http://127.0.0.1:9"]


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


def wait_for(what: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def as_role(dsn: str, role: str) -> str:
    parts = urlsplit(dsn)
    return urlunsplit((parts.scheme, f"{role}@{parts.hostname}:{parts.port}", parts.path, "", ""))


def _drop(conn: psycopg.Connection[Any], role: str) -> None:
    if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
        conn.execute(f"DROP OWNED BY {role} CASCADE")
        conn.execute(f"DROP ROLE {role}")


@pytest.fixture
def roles(pg_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    """An owner role that made the ledger and a DML-only app role (the
    README's grants); the superuser's connection."""
    conn = psycopg.connect(pg_dsn, autocommit=True)
    for role in (OWNER, APP):
        _drop(conn, role)
    try:
        conn.execute(f"CREATE ROLE {OWNER} LOGIN")
        conn.execute(f"CREATE SCHEMA reclaim_tui AUTHORIZATION {OWNER}")
        made = run_cli(["tick", "--db", as_role(pg_dsn, OWNER), *API])
        assert made.returncode == 0, made.stderr
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


def start(ws: Workspace, log: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "reclaim_tui", "run", *ws.engine_flags("run")]
    argv += ["--log", str(log), "--idle-sleep", "0.5", *extra]
    return subprocess.Popen(argv, env=ws.env(), stderr=subprocess.PIPE, text=True)


def ended(proc: subprocess.Popen[str], timeout: float = 60.0) -> tuple[int, str]:
    """Its exit code and stderr, once it exits by itself (a loop for ever fails)."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the service did not exit") from None
    return code, proc.stderr.read() if proc.stderr else ""


def test_a_grant_revoked_mid_run_is_waited_for_and_said(
    make_workspace: Callable[..., Workspace],
    roles: psycopg.Connection[Any],
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    ws = make_workspace("revoked", db_url=as_role(pg_dsn, APP))
    log = tmp_path / "run.log"
    proc = start(ws, log)
    try:
        wait_for(lambda: any(x["event"] == "ready" for x in lines(log)))
        roles.execute(f"REVOKE INSERT, UPDATE, DELETE ON reclaim_tui.events FROM {APP}")
        jobs = write_jobs(tmp_path / "j.jsonl", [{"input": f"revoked {i}"} for i in range(3)])
        owner = run_cli(["submit", "--no-send", str(jobs), "--db", as_role(pg_dsn, OWNER)])
        assert owner.returncode == 0, owner.stderr
        wait_for(
            lambda: (
                proc.poll() is not None
                or any(x["event"] == "ledger_unavailable" and x.get("refused") for x in lines(log))
            )
        )
        assert proc.poll() is None, ended(proc)[1]
        said = next(x for x in lines(log) if x.get("refused"))
        assert "GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE events" in said["error"]
        roles.execute(f"GRANT INSERT, UPDATE, DELETE ON reclaim_tui.events TO {APP}")
        wait_for(lambda: LedgerView(pg_dsn).status_counts() == {"consumed": 3})
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    code, err = ended(proc)
    assert code == 0, err
    last = lines(log)[-1]
    assert last["event"] == "stopped" and last["code"] == 0, last


def test_a_service_that_cannot_start_ends_its_log_with_why(
    make_workspace: Callable[..., Workspace],
    roles: psycopg.Connection[Any],
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    roles.execute(f"REVOKE USAGE ON SCHEMA reclaim_tui FROM {APP}")
    ws = make_workspace("refused", db_url=as_role(pg_dsn, APP))
    log = tmp_path / "run.log"
    code, err = ended(start(ws, log))
    assert code == 4, err
    last = lines(log)[-1]
    assert last["event"] == "stopped" and last["code"] == 4, last
    assert f'the role "{APP}" lacks a right' in last["error"], last
    assert "grants" in last["hint"], last


def test_a_wrong_password_exits_at_start_with_the_reason(
    make_workspace: Callable[..., Workspace], pg_server: PostgresServer, pg_dsn: str, tmp_path: Path
) -> None:
    with started_bouncer(PgBouncer(pg_server, auth="md5", password="right one")) as bouncer:
        url = bouncer.via(pg_dsn).replace(":right one@", ":wrong@")
        ws = make_workspace("password", db_url=url)
        log = tmp_path / "run.log"
        code, err = ended(start(ws, log))
    assert code == 4, err
    assert "the password was refused" in err and "wrong" not in err
    last = lines(log)[-1]
    assert last["event"] == "stopped" and last["code"] == 4
    assert not any(x["event"] == "ledger_unavailable" for x in lines(log))


class TlsServer(PostgresServer):
    """A throwaway server with TLS on (a self-signed certificate)."""

    def _start_on_free_port(self) -> None:
        assert self.root is not None and self._owner is not None
        key, crt = self.root / "server.key", self.root / "server.crt"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(crt)],
            check=True, capture_output=True,
        )  # fmt: skip
        key.chmod(0o600)
        for path in (key, crt):
            self._owner.give(path)
        super()._start_on_free_port()

    def _server_options(self) -> str:
        return (
            f"{super()._server_options()} -c ssl=on"
            f" -c ssl_cert_file={self.root}/server.crt -c ssl_key_file={self.root}/server.key"
        )


def test_a_missing_ca_file_exits_at_start_with_the_reason(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    server = started(TlsServer())
    try:
        missing = tmp_path / "nowhere" / "ca.pem"
        url = f"{server.dsn()}?sslmode=verify-full&sslrootcert={missing}"
        ws = make_workspace("ca", db_url=url)
        log = tmp_path / "run.log"
        code, err = ended(start(ws, log))
    finally:
        server.cleanup()
    assert code == 4, err
    assert "the CA file (sslrootcert) cannot be used" in err and str(missing) in err, err
    assert lines(log)[-1]["code"] == 4


def test_a_pooler_restart_leaves_no_driver_lines_on_stderr(
    make_workspace: Callable[..., Workspace], pg_server: PostgresServer, pg_dsn: str, tmp_path: Path
) -> None:
    """Issue 33, 7: psycopg's `error ignored terminating <psycopg.AsyncPipeline
    …>` reached stderr after each disconnect (13 in the trial): not JSON, not
    in --log. The error it repeats is the one the service reports."""
    with started_bouncer(PgBouncer(pg_server, pool_mode="transaction")) as bouncer:
        ws = make_workspace("bounced", db_url=bouncer.via(pg_dsn))
        log = tmp_path / "run.log"
        proc = start(ws, log)
        try:
            wait_for(lambda: any(x["event"] == "ready" for x in lines(log)))
            for restarts in (1, 2):
                bouncer.restart()
                wait_for(
                    lambda n=restarts: sum(x["event"] == "ledger_back" for x in lines(log)) >= n
                )
        finally:
            proc.send_signal(signal.SIGTERM)
        code, err = ended(proc)
    assert code == 0, err
    assert "error ignored" not in err and "AsyncPipeline" not in err, err
    assert [x["event"] for x in lines(log)].count("ledger_unavailable") >= 2
