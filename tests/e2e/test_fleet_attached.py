"""`:fleet` in a console attached to a service shows the service's own state
and last pass, as its control socket says it (issue 25: the fleet lacked
them), and says it gone once the service stopped; its registered line (issue 25's
process registry) says it is the attached one, then stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from textual.widgets import Static

from reclaim_tui.config import Settings
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.screens.fleet import FleetScreen
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs
from tests.tui.pilot_helpers import SIZE, press, until

from .test_attach_service_state import _lines, _wait


def _fleet(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    if not isinstance(screen, FleetScreen):
        return ""
    return str(screen.query_one("#fleet", Static).render())


async def test_the_fleet_shows_the_attached_services_state(tmp_path: Path) -> None:
    sock = Path(f"/tmp/rt-fleet-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"fleet {i}"} for i in range(2)])
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--idle-sleep", "0.2", "--first-poll", "0.3", "--control", str(sock)]
        service = [sys.executable, "-m", "reclaim_tui", *args]
        proc = subprocess.Popen(service, env=clean_env())  # noqa: ASYNC220 — before any loop work
        try:
            assert _wait(lambda: any(line["event"] == "ready" for line in _lines(log)))
            app = make_app(Settings(db=str(ws.db), out=str(ws.out)), attach=str(sock))
            async with app.run_test(size=SIZE) as pilot:
                assert await until(
                    pilot, lambda: ws.view().status_counts().get("consumed", 0) == 2, 120
                )
                assert await until(pilot, lambda: app.pace.mode == "up")
                await press(pilot, "colon", *"fleet", "enter")
                assert await until(pilot, lambda: "Attached service" in _fleet(app))
                text = _fleet(app)
                assert f"pid {proc.pid}" in text and " up " in text, text
                assert "service's last pass" in text and "passes" in text, text
                # Its own line among the registered processes says it is the attached one.
                mine = text.split("Processes")[1].split("Lease holders")[0]
                assert f"pid {proc.pid}" in mine and "the attached service" in mine, text
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(60) == 0
                assert await until(pilot, lambda: app.pace.mode == "gone", 10)
                await press(pilot, "r")  # read again
                assert await until(pilot, lambda: "gone:" in _fleet(app)), _fleet(app)
                attached, processes = _fleet(app).split("Processes", 1)
                assert f"pid {proc.pid}" not in attached
                # The registry heard its clean exit: stopped, no longer the attached one.
                line = next(x for x in processes.splitlines() if f"pid {proc.pid}" in x)
                assert "stopped" in line and "attached" not in line, line
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
