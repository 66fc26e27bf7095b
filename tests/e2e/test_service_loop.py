"""`run --loop` (issue 39.4): the service on uvloop's event loop, a process
against the embedded emulator. Its `ready` line names the loop it runs on
(read off the running loop); on uvloop it takes every job to consumed and a
SIGTERM drains it with nothing lost; uvloop asked for where it cannot be
imported is a usage error (exit 2) that opens nothing."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs

from .test_attach_service_state import _lines
from .test_service import _wait

JOBS = 40

needs_uvloop = pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None,
    reason="uvloop is not installed (the `fast` extra: pip install -e '.[fast]')",
)


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "reclaim_tui", *args]


@needs_uvloop
@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_service_on_uvloop_consumes_every_job_and_drains_on_sigterm(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    # On PostgreSQL too: psycopg's async connections wait on the loop's readers.
    db_url = request.getfixturevalue("pg_dsn") if engine == "postgres" else None
    with EmulatorProcess(tmp_path, latency=0.05) as emu:
        ws = Workspace(tmp_path / "svc-uv", emulator=emu, db_url=db_url)
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"uv {i}"} for i in range(JOBS)])
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--loop", "uvloop"]
        args += ["--jobs", str(jobs), "--idle-sleep", "0.2", "--first-poll", "0.1"]
        args += ["--inbox-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"]
        proc = subprocess.Popen(_cli(*args), env=clean_env())
        try:
            assert _wait(lambda: ws.view().status_counts().get("consumed", 0) == JOBS)
        finally:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(60)
        assert code == 0
        lines = _lines(log)
        assert lines[0]["event"] == "ready" and lines[0]["loop"] == "uvloop"
        events = [line["event"] for line in lines]
        assert "draining" in events and events[-1] == "stopped"
        assert lines[-1]["code"] == 0
        # Nothing lost: every job consumed, its result delivered, one create each.
        assert ws.view().status_counts() == {"consumed": JOBS}
        assert len(list(ws.out.glob("*.json"))) == JOBS
        assert emu.stats()["calls"]["create"] == JOBS


@needs_uvloop
def test_reclaim_loop_in_the_environment_picks_uvloop(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "svc-env", emulator=None)
    log = ws.root / "run.log"
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log), "--once"]
    args += ["--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    env = clean_env({"RECLAIM_LOOP": "uvloop"})
    done = subprocess.run(_cli(*args), env=env, timeout=120)
    assert done.returncode == 0
    assert _lines(log)[0]["loop"] == "uvloop"


def test_the_service_runs_on_asyncio_unless_told(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "svc-default", emulator=None)
    log = ws.root / "run.log"
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log), "--once"]
    args += ["--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    done = subprocess.run(_cli(*args), env=clean_env(), timeout=120)
    assert done.returncode == 0
    assert _lines(log)[0]["loop"] == "asyncio"


@pytest.mark.parametrize("command", ["run", "tick"])
def test_uvloop_asked_for_and_not_installed_is_a_usage_error_that_opens_nothing(
    tmp_path: Path, command: str
) -> None:
    # uvloop hidden: a module of that name first on the path that cannot be imported,
    # as `import uvloop` fails where the extra is not installed.
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "uvloop.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'uvloop'\", name='uvloop')\n"
    )
    env = clean_env()
    env["PYTHONPATH"] = f"{hidden}:{env['PYTHONPATH']}"
    ws = Workspace(tmp_path / "no-uv", emulator=None)
    log = ws.root / "run.log"
    args = [command, "--db", str(ws.db), "--out", str(ws.out), "--loop", "uvloop"]
    args += ["--base-url", "http://127.0.0.1:9", "--api-key", "k"]
    if command == "run":
        args += ["--log", str(log), "--once"]
    done = subprocess.run(_cli(*args), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Invalid value for '--loop': uvloop is not installed" in done.stderr
    assert "pip install 'reclaim-tui[fast]'" in done.stderr
    assert done.stdout == ""
    assert not Path(ws.db).exists() and not log.exists() and not ws.out.exists()
