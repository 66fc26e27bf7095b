"""Quitting a console that paused its service (issue 32, item 10, the
console's part): the service stayed paused with no word. Now the console
asks (y resumes it, then quits; n stays; q again quits and leaves it paused),
and `:fleet` shows the paused service as paused, its passes counted once.
A real `reclaim-tui run --control` process on the emulator."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.fleet import FleetScreen
from tests.e2e.test_attach_service_state import _bar, _lines, _paced, _wait
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs
from tests.tui.pilot_helpers import SIZE, notified, press, until


def _resumes(log: Path) -> int:
    """How many times the service said it was resumed."""
    return sum(1 for x in _lines(log) if x["event"] == "pace" and x.get("paused") is False)


def _fleet_text(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    return str(screen.query_one("#fleet").render()) if isinstance(screen, FleetScreen) else ""


async def test_quitting_a_console_that_paused_its_service_asks_first(tmp_path: Path) -> None:
    sock = Path(f"/tmp/rt-quit-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"quit {i}"} for i in range(2)])
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
                assert await until(pilot, lambda: "● up" in _bar(app)), _bar(app)
                await press(pilot, "P")
                assert await until(pilot, lambda: _paced(log, paused=True))
                assert await until(pilot, lambda: "● paused" in _bar(app))
                # :fleet: the attached service paused, and one count of its passes.
                await press(pilot, "colon", *"fleet", "enter")
                assert await until(pilot, lambda: "the attached service" in _fleet_text(app))
                text = _fleet_text(app)
                [line] = [x for x in text.splitlines() if "the attached service" in x]
                assert " paused " in line, text
                assert text.count(" passes") + text.count(" pass\n") == 1, text
                await press(pilot, "escape")
                # q asks first; n stays.
                await press(pilot, "q")
                assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                assert "paused the service" in app.screen.question
                await press(pilot, "n")
                assert await until(pilot, notified(pilot, "the service stays paused"))
                assert app.is_running
                # Resumed and paused again here: q asks again; y resumes, then quits.
                await press(pilot, "P")
                assert await until(pilot, lambda: "● up" in _bar(app))
                await press(pilot, "P")
                assert await until(pilot, lambda: "● paused" in _bar(app))
                await press(pilot, "q")
                assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                await press(pilot, "y")
                assert await until(pilot, lambda: _resumes(log) == 2)
                assert await until(pilot, lambda: not app.is_running)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
            sock.unlink(missing_ok=True)
