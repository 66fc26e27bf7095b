"""The fleet shows processes no console is attached to (issue 25): a real
cron `tick` and a real `run` service, each on another "host" (its owner
string's, RECLAIM_OWNER_HOST), register themselves in the ledger; a
read-only console's `:fleet` shows both with their state and last pass,
writes nothing itself, and shows the service stopped after its SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable

from textual.widgets import Static

from reclaim_tui.config import Settings
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.screens.fleet import FleetScreen
from tests.helpers import Workspace
from tests.helpers.procs import write_jobs
from tests.tui.pilot_helpers import SIZE, press, until

from .test_attach_service_state import _lines, _wait


def _fleet(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    if not isinstance(screen, FleetScreen):
        return ""
    return str(screen.query_one("#fleet", Static).render())


def _line(text: str, host: str) -> str:
    """A process's two lines in the fleet's text."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if host in line)
    return "\n".join(lines[at : at + 2])


async def _registered(db: str) -> dict[str, tuple[str, str, int, str | None]]:
    ledger = await open_ledger(db, readonly=True)
    try:
        rows = await ledger.select("SELECT host, kind, state, passes, last_pass FROM processes")
    finally:
        await ledger.close()
    return {r[0]: (r[1], r[2], int(r[3]), r[4]) for r in rows}


async def test_a_tick_and_a_service_on_other_hosts_are_in_the_fleet(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace()
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"far {i}"} for i in range(2)])
    tick = ws.tick(jobs=jobs, env={"RECLAIM_OWNER_HOST": "far-host"})
    assert tick.returncode == 0, tick.stderr
    db = str(ws.db)
    [(kind, state, passes, last)] = (await _registered(db)).values()
    assert (kind, state, passes) == ("tick", "stopped", 1) and "inserted=2" in (last or "")

    log = ws.root / "run.log"
    args = ["run", *ws.engine_flags("run"), "--log", str(log), "--idle-sleep", "0.3"]
    service = subprocess.Popen(  # noqa: ASYNC220 — started before the console's loop works
        [sys.executable, "-m", "reclaim_tui", *args], env=ws.env({"RECLAIM_OWNER_HOST": "svc-host"})
    )
    try:
        assert _wait(lambda: any(line["event"] == "pass" for line in _lines(log)))
        app = make_app(Settings(db=db, out=str(ws.out)), readonly=True)
        async with app.run_test(size=SIZE) as pilot:
            await press(pilot, "colon", *"fleet", "enter")
            assert await until(pilot, lambda: "svc-host" in _fleet(app), 30), _fleet(app)
            text = _fleet(app)
            far = _line(text, "far-host")
            assert "tick" in far and "stopped" in far and "inserted=2" in far, far
            svc = _line(text, "svc-host")
            assert "service" in svc and " up " in svc and "every 0.3s" in svc, svc
            assert f"pid {service.pid}" in svc and "last pass" in svc, svc
            service.send_signal(signal.SIGTERM)
            assert service.wait(60) == 0
            await press(pilot, "r")
            assert await until(pilot, lambda: "stopped" in _line(_fleet(app), "svc-host"), 30)
        # The read-only console registered nothing: only the tick and the service.
        registered = await _registered(db)
        assert set(registered) == {"far-host", "svc-host"}
        assert registered["svc-host"][:2] == ("service", "stopped")
    finally:
        if service.poll() is None:
            service.send_signal(signal.SIGTERM)
            service.wait(60)


async def test_run_once_registers_as_a_run(make_workspace: Callable[..., Workspace]) -> None:
    """`run --once` is a tick in the service's shape: kind `run`, stopped after its pass."""
    ws = make_workspace("once")
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "once"}])
    done = ws.cli("run", "--once", "--jobs", str(jobs), env={"RECLAIM_OWNER_HOST": "once-host"})
    assert done.returncode == 0, done.stderr
    assert (await _registered(str(ws.db)))["once-host"][:3] == ("run", "stopped", 1)
