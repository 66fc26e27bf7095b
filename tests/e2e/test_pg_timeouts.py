"""What an administrator's settings do to a service on PostgreSQL (issue 33):
a role's `statement_timeout` shorter than `--busy-timeout`, a grant revoked
and restored mid-run. A service rides out what is transient, and whatever
ends it, its `--log` ends with a `stopped` line saying why.
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

import psycopg
import pytest

from tests.helpers import Workspace
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.postgres

#: A busy timeout well above the role's 1 s statement_timeout, and a lease
#: the CLI accepts with it (≥ 3 × (request + busy timeout)).
SLOW_LOCKS = ("--busy-timeout", "5", "--lease-seconds", "30")


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


def wait_for(what: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def dbname(dsn: str) -> str:
    return dsn.rsplit("/", 1)[1]


@pytest.fixture
def admin(pg_dsn: str) -> Iterator[psycopg.Connection[Any]]:
    conn = psycopg.connect(pg_dsn, autocommit=True)
    try:
        yield conn
    finally:
        conn.close()


def start_service(ws: Workspace, log: Path, *extra: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "reclaim_tui", "run", *ws.engine_flags("run"), *SLOW_LOCKS]
    argv += ["--log", str(log), "--idle-sleep", "0.5", *extra]
    return subprocess.Popen(argv, env=ws.env(), stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    return code, proc.stderr.read() if proc.stderr else ""


def test_a_statement_timeout_shorter_than_the_busy_timeout_is_waited_out(
    make_workspace: Callable[..., Workspace],
    admin: psycopg.Connection[Any],
    pg_dsn: str,
    tmp_path: Path,
) -> None:
    """Issue 33, 2: with `statement_timeout = 1s` set by the administrator
    and a lock held longer, every `run` exited 4 ("the query was
    interrupted"): QueryCanceled was a plain ledger error, while a lock
    timeout (`--busy-timeout`) was waited out. A statement the server
    cancelled at its statement_timeout is now waited for and tried again,
    and the log says so."""
    ws = make_workspace("timeout", db_url=pg_dsn)
    first = ws.tick()  # the ledger, made before the administrator's setting
    assert first.returncode == 0, first.stderr
    admin.execute(f"ALTER ROLE postgres IN DATABASE {dbname(pg_dsn)} SET statement_timeout = '1s'")
    jobs = write_jobs(tmp_path / "j.jsonl", [{"input": f"locked {i}"} for i in range(3)])
    log = tmp_path / "run.log"
    with admin.transaction():
        # Someone holds the jobs for longer than the role's statement_timeout:
        # reads go on, every write waits.
        admin.execute("LOCK TABLE reclaim_tui.jobs IN EXCLUSIVE MODE")
        proc = start_service(ws, log, "--jobs", str(jobs))
        try:
            wait_for(
                lambda: (
                    proc.poll() is not None
                    or any(
                        "statement_timeout" in str(x.get("error"))
                        for x in lines(log)
                        if x["event"] == "ledger_unavailable"
                    )
                )
            )
            assert proc.poll() is None, stop(proc)[1]
        except BaseException:
            stop(proc)
            raise
    try:
        wait_for(lambda: LedgerView(pg_dsn).status_counts() == {"consumed": 3})
    finally:
        code, err = stop(proc)
    assert code == 0, err
    events = [x["event"] for x in lines(log)]
    assert "ledger_back" in events and events[-1] == "stopped", events
