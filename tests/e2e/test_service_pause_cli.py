"""A service paused through its control socket shows in `status` and is
resumed from the CLI (issue 32, item 10): before, `status` said nothing of a
paused service and no command resumed one (a console that attached, pressed
P and quit left it paused for good). Real processes: the emulator, a
`run --control` service, the CLI."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_attach_service_state import _lines, _paced, _wait
from tests.helpers import EmulatorProcess, Workspace, run_cli
from tests.helpers.procs import clean_env, write_jobs


def _paused(db: Path) -> dict[str, object]:
    out = run_cli(["status", "--db", str(db), "--json"])
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["paused"]  # type: ignore[no-any-return]


def test_a_paused_service_shows_in_status_and_the_cli_resumes_it(tmp_path: Path) -> None:
    sock = Path(f"/tmp/rt-pause-{tmp_path.name[-20:]}.sock")
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        log = ws.root / "run.log"
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key]
        args += ["--idle-sleep", "0.2", "--control", str(sock)]
        proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
        try:
            assert _wait(lambda: any(line["event"] == "ready" for line in _lines(log)))
            assert _paused(ws.db)["count"] == 0
            paused = run_cli(["service", "pause", str(sock)])
            assert paused.returncode == 0, paused.stderr
            assert f"service pid {proc.pid}: paused" in paused.stdout, paused.stdout
            assert _wait(lambda: _paced(log, paused=True))
            assert _wait(lambda: _paused(ws.db)["count"] == 1)
            (process,) = _paused(ws.db)["processes"]  # type: ignore[misc]
            assert (process["kind"], process["pid"]) == ("service", proc.pid)
            text = run_cli(["status", "--db", str(ws.db)])
            assert f"service pid {proc.pid}" in text.stderr and "is paused" in text.stderr
            assert "service resume" in text.stderr, text.stderr

            resumed = run_cli(["service", "resume", str(sock), "--json"])
            assert resumed.returncode == 0, resumed.stderr
            assert json.loads(resumed.stdout)["state"] == "up"
            assert _wait(lambda: _paused(ws.db)["count"] == 0)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    nobody = run_cli(["service", "status", str(sock)])
    assert nobody.returncode != 0 and "no service there" in nobody.stderr, nobody.stderr


def test_a_service_that_drains_leaves_its_wal_empty_beside_a_reader(tmp_path: Path) -> None:
    """A clean exit checkpoints: with a reader still open (a console, a
    `status`), SQLite's own checkpoint at the last close never came, and the
    WAL kept the ledger's latest writes beside the `.db` (issue 32 item 14)."""
    with EmulatorProcess(tmp_path, latency=0.1) as emu:
        ws = Workspace(tmp_path / "svc", emulator=emu)
        log = ws.root / "run.log"
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"wal {i}"} for i in range(3)])
        args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
        args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--jobs", str(jobs)]
        args += ["--idle-sleep", "0.2", "--first-poll", "0.3"]
        proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
        reader = None
        try:
            assert _wait(lambda: any(line["event"] == "pass" for line in _lines(log)))
            reader = sqlite3.connect(f"file:{ws.db}?mode=ro", uri=True)
            assert reader.execute("SELECT COUNT(*) FROM jobs").fetchone() == (3,)
            wal = Path(f"{ws.db}-wal")
            assert wal.stat().st_size > 0
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
            assert wal.stat().st_size == 0  # the reader keeps the file; it is empty
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if reader is not None:
                reader.close()
