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

from tests.helpers import Workspace
from tests.helpers.ledgerdb import LedgerView
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
