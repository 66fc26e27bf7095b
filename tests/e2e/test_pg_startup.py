"""Start-up and connections on PostgreSQL (issue 23, point 5): a service
started before its database waits for it; the connections each process
holds; a process waiting for a full pooler says what it waits for."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg

from tests.helpers import Workspace
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.pgbouncer import PgBouncer
from tests.helpers.postgres import PostgresServer, started
from tests.helpers.procs import write_jobs


def _lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{")]


def _wait_for(what: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_run_started_before_its_database_waits_for_it(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    """Issue 23: `run` exited 4 at start when the server was not reachable
    yet (it waited and retried only mid-run): a service started by systemd
    before its database died. Now it says `ledger_unavailable` and waits; once
    the server is up, the jobs get done."""
    server = started(PostgresServer())
    try:
        url = server.create_database("late")
        server.stop()
        ws = make_workspace("late", db_url=url)
        jobs = write_jobs(tmp_path / "j.jsonl", [{"input": f"late {i}"} for i in range(4)])
        log = tmp_path / "run.log"
        argv = [sys.executable, "-m", "reclaim_tui", "run", *ws.engine_flags("run")]
        argv += ["--jobs", str(jobs), "--log", str(log), "--idle-sleep", "0.5"]
        proc = subprocess.Popen(argv, env=ws.env(), stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(
                lambda: (
                    proc.poll() is not None
                    or any(x["event"] == "ledger_unavailable" for x in _lines(log))
                )
            )
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            server.resume()
            _wait_for(lambda: LedgerView(url).status_counts() == {"consumed": 4})
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        assert code == 0
        events = [x["event"] for x in _lines(log)]
        assert events.index("ledger_unavailable") < events.index("ready")
        assert events[-1] == "stopped"
    finally:
        server.cleanup()


def test_a_full_session_pool_is_named_while_waited_for(
    make_workspace: Callable[..., Workspace],
    pg_server: PostgresServer,
    pg_dsn: str,
) -> None:
    """Issue 23: in a full session pool a process hung silently for the
    pooler's query_wait_timeout, then exited 4 (`query_wait_timeout`). It
    now says, while it waits, what it waits for, and its error names the
    pooler's full pool. A pool of one server connection, held by another
    client; the pooler gives up after 8 s."""
    settings = {"query_wait_timeout": 8}
    with PgBouncer(pg_server, pool_mode="session", pool_size=1, settings=settings) as bouncer:
        url = bouncer.via(pg_dsn)
        ok_tick = make_workspace("first", db_url=url).tick()
        assert ok_tick.returncode == 0, ok_tick.stderr
        with psycopg.connect(url, autocommit=True, prepare_threshold=None) as holder:
            holder.execute("SELECT 1")  # session mode: the one server connection is its own
            done = make_workspace("second", db_url=url).tick()
    assert done.returncode == 4, done.stderr
    waiting, error = done.stderr.strip().splitlines()[0], done.stderr.strip().splitlines()[-1]
    assert "waiting" in waiting and "pool" in waiting and "query_wait_timeout" in waiting
    assert error.startswith("error:") and "query_wait_timeout" in error and "pool" in error
