"""A console attached to `reclaim-tui run --control` (issue 14): the service,
a real process on the emulator, runs every pass and every operator action;
the console runs no engine and no loop of its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.widgets.loop_log import LoopLog
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs
from tests.tui.pilot_helpers import SIZE, until
from tests.tui.test_loop_log import log_text

JOBS = 6


def _lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _wait(predicate, limit: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


async def test_a_console_attached_to_a_service_uses_its_engine(tmp_path: Path) -> None:
    sock = Path(f"/tmp/rt-attach-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"attach {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--idle-sleep", "0.2", "--first-poll", "0.3", "--control", str(sock)]
        service = [sys.executable, "-m", "reclaim_tui", *args]
        proc = subprocess.Popen(service, env=clean_env())  # noqa: ASYNC220 — before any loop work
        try:
            assert _wait(lambda: any(line["event"] == "ready" for line in _lines(log)))
            ready = next(line for line in _lines(log) if line["event"] == "ready")
            assert ready["control"] == str(sock)
            # No API key and no base URL in the console's settings: it builds no
            # engine, so it could not call the API if it tried.
            app = make_app(Settings(db=str(ws.db), out=str(ws.out)), attach=str(sock))
            assert isinstance(app.host, AttachedHost)
            async with app.run_test(size=SIZE) as pilot:
                assert await until(pilot, lambda: app.host is not None and app.host.alive)
                assert await until(
                    pilot, lambda: ws.view().status_counts().get("consumed", 0) == JOBS, 120
                )
                assert "attached to" in (app.sub_title or "")
                # The loop log shows the service's passes (the console ran none).
                log = app.query_one(LoopLog)
                assert await until(pilot, lambda: "pass" in "\n".join(log_text(log)), 60)
            assert not [n for n in app._notifications if "API key" in n.message]
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
        assert not sock.exists(), "the service removes its socket when it stops"
        actors = {e.actor for e in ws.view().events()}
        assert actors == {"service"}, "every pass was the service's"


def test_an_attached_console_refuses_another_ledger_and_creates_none(tmp_path: Path) -> None:
    sock = Path(f"/tmp/rt-attach2-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--control", str(sock)]
        proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
        try:
            assert _wait(lambda: any(line["event"] == "ready" for line in _lines(log)))
            elsewhere = tmp_path / "elsewhere"
            elsewhere.mkdir()
            console = [sys.executable, "-m", "reclaim_tui", "console", "--attach", str(sock)]
            refused = subprocess.run(
                [*console, "--db", "other.db"],
                cwd=elsewhere,
                env=clean_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert refused.returncode == 2, refused.stderr
            assert "the service at" in refused.stderr and str(ws.db) in refused.stderr
            assert list(elsewhere.iterdir()) == [], "no ledger is created beside the console"
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0
