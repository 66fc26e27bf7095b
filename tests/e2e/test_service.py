"""`reclaim-tui run` as a process (issue 14): ready, passes, SIGTERM drains
and exits 0; with --inbox-listen the webhook inbox runs in the same process
and its events wake the loop (one create and one get per job)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.ports import free_port
from tests.helpers.procs import clean_env, write_jobs

JOBS = 8


def _lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _start(ws: Workspace, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log), *extra]
    args += ["--base-url", ws.emulator.base_url, "--api-key", ws.emulator.api_key]  # type: ignore[union-attr]
    return subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())


def _wait(predicate, limit: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while True:
        try:
            if predicate():
                return True
        except sqlite3.Error:  # the service has not created the ledger yet
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_run_serves_until_sigterm_then_drains(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path, latency=0.2) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"svc {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        proc = _start(ws, log, "--jobs", str(jobs), "--idle-sleep", "0.2", "--first-poll", "0.5")
        try:
            assert _wait(lambda: ws.view().status_counts().get("consumed", 0) == JOBS)
            assert _lines(log)[0]["event"] == "ready"
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
        events = [line["event"] for line in _lines(log)]
        # A pass in progress when the signal came finishes (and says so) before "stopped".
        assert events[0] == "ready" and "pass" in events and events[-1] == "stopped"
        assert "draining" in events[events.index("pass") :]
        actors = {e.actor for e in ws.view().events()}
        assert actors == {"service"}


def test_run_with_its_own_inbox_one_create_one_get_per_job(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path, latency=0.3, flags=("--latency-max", "1")) as emu:
        ws = Workspace(tmp_path / "svc-inbox", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"hooked {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        port = free_port()
        url = f"http://127.0.0.1:{port}/webhooks/gemini"
        proc = _start(
            ws,
            log,
            "--jobs", str(jobs),
            "--inbox-listen", f"127.0.0.1:{port}",
            "--inbox-jwks-url", f"{emu.base_url}/.well-known/jwks.json",
            "--webhook-url", url,
            "--webhook-poll", "600",  # a poll here would mean an event was lost
            "--idle-sleep", "30",  # only an event can wake it in time
        )  # fmt: skip
        try:
            assert _wait(lambda: ws.view().status_counts().get("consumed", 0) == JOBS)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
        calls = emu.stats()["calls"]
        assert (calls["create"], calls["get"]) == (JOBS, JOBS)
        assert _lines(log)[0]["inbox"] == url


def test_the_service_builds_its_api_client_before_it_says_ready(tmp_path: Path) -> None:
    """Issue 27: the 'warm' service imported google-genai and built its client on the
    first job (~0.8 s, a fifth of a 1,000-job window); now before `ready`, which names
    the SDK it built."""
    from importlib.metadata import version

    ws = Workspace(tmp_path / "svc-warm", emulator=None)
    log = ws.root / "run.log"
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log), "--once"]
    args += ["--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    done = subprocess.run(
        [sys.executable, "-m", "reclaim_tui", *args], env=clean_env(), timeout=120
    )
    assert done.returncode == 0
    ready = _lines(log)[0]
    assert ready["event"] == "ready"
    assert ready["sdk"] == f"google-genai {version('google-genai')}"
