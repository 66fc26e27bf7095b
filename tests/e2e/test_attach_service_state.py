"""An attached console shows the SERVICE's own state and sets its pace
through the control socket (issue 25, D5): a real `reclaim-tui run
--control` process on the emulator, a Pilot-driven console attached to it.
Before: the bar said the console's local loop ("running … API ok") after the
service got SIGTERM, logged a failure every 2 s, and `P` paused only the
console while the service kept polling."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.widgets.loop_bar import LoopBar
from reclaim_tui.tui.widgets.loop_log import LoopLog
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs
from tests.tui.pilot_helpers import SIZE, notified, press, until
from tests.tui.test_loop_log import log_text

JOBS = 3


def _lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _paced(log: Path, **change: object) -> bool:
    """The service said it took this pace change (its `pace` log line)."""
    return any(
        line["event"] == "pace" and all(line.get(k) == v for k, v in change.items())
        for line in _lines(log)
    )


def _wait(predicate, limit: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _consumed(lines: list[str]) -> int:
    """Rows the log says the service's passes consumed (before and since attaching)."""
    return sum(int(n) for line in lines for n in re.findall(r"consumed=(\d+)", line))


def _bar(app: object) -> str:
    return str(app.main.query_one(LoopBar).render())  # type: ignore[attr-defined]


async def test_the_attached_console_shows_and_sets_the_services_own_state(
    tmp_path: Path,
) -> None:
    sock = Path(f"/tmp/rt-state-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"state {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--idle-sleep", "0.2", "--first-poll", "0.3", "--concurrency", "4"]
        args += ["--control", str(sock)]
        service = [sys.executable, "-m", "reclaim_tui", *args]
        proc = subprocess.Popen(service, env=clean_env())  # noqa: ASYNC220 — before any loop work
        try:
            assert _wait(lambda: any(line["event"] == "ready" for line in _lines(log)))
            app = make_app(Settings(db=str(ws.db), out=str(ws.out)), attach=str(sock))
            async with app.run_test(size=SIZE) as pilot:
                shown = app.main.query_one(LoopLog)
                # The service's own state and pace, not the console's 2 s loop.
                up = "● up every 0.2s · concurrency 4"
                assert await until(pilot, lambda: up in _bar(app)), _bar(app)
                assert await until(
                    pilot, lambda: ws.view().status_counts().get("consumed", 0) == JOBS, 120
                )
                # Its passes' work, counted from its totals (none missed).
                assert await until(pilot, lambda: _consumed(log_text(shown)) == JOBS, 30), log_text(
                    shown
                )
                assert app.main.bar.last.startswith("service's last pass ")
                assert app.main.bar.api == "ok"
                # P pauses the SERVICE (its log says so), and the bar says it.
                await press(pilot, "P")
                assert await until(pilot, lambda: _paced(log, paused=True))
                assert await until(pilot, lambda: "● paused every 0.2s" in _bar(app))
                await press(pilot, "P")
                assert await until(pilot, lambda: _paced(log, paused=False))
                assert await until(pilot, lambda: "● up" in _bar(app))
                # + steps the service's pass interval; :concurrency sets its calls.
                await press(pilot, "plus")
                assert await until(pilot, lambda: _paced(log, interval=0.5))
                assert await until(pilot, lambda: "every 0.5s" in _bar(app))
                await press(pilot, "colon", *"concurrency 3", "enter")
                assert await until(pilot, lambda: _paced(log, concurrency=3))
                assert await until(pilot, lambda: "· concurrency 3" in _bar(app))
                # A value the service refuses: said in red, nothing changed.
                await press(pilot, "colon", *"concurrency 0", "enter")
                assert await until(pilot, notified(pilot, "must be between 1 and 1024"))
                assert not _paced(log, concurrency=0)
                assert "· concurrency 3" in _bar(app)
                # The service stops: the console says gone within its refresh,
                # never a stale "up", pace or "API ok"; and says it once.
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(60) == 0
                assert await until(pilot, lambda: "● gone" in _bar(app), 10)
                bar = _bar(app)
                assert "● up" not in bar and "every" not in bar and "API ok" not in bar
                await pilot.pause(3.5)  # three more looks at a gone service
                gone = [line for line in log_text(shown) if "service gone" in line]
                assert len(gone) == 1, log_text(shown)
                assert not [line for line in log_text(shown) if "pass failed" in line]
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
