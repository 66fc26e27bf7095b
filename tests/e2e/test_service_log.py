"""Issue 40 item 6: `run --log` on a full disk.

At start on /dev/full, and mid-run when the log's disk fills, the first
line that could not be written raised out of `print` and ended the service
with a traceback while its ledger had room. Now a line that cannot be
written is said once on stderr, and the service works on and drains.
"""

from __future__ import annotations

import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

JOBS = 3


def _until(predicate, limit: float = 90.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _serve(ws: Workspace, log: str, *, max_file_bytes: int | None = None) -> subprocess.Popen[str]:
    jobs = write_jobs(ws.root / "j.jsonl", [{"input": f"log {n}"} for n in range(JOBS)])
    args = ["run", *ws.engine_flags("run"), "--jobs", str(jobs), "--log", log]
    args += ["--idle-sleep", "0.2"]

    def limit() -> None:  # Python ignores SIGXFSZ: a write past it fails with EFBIG
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return subprocess.Popen(
        [sys.executable, "-m", "reclaim_tui", *args],
        env=ws.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=limit,
    )


def _counts(ws: Workspace) -> dict[str, int]:
    try:
        return dict(ws.view().status_counts())
    except sqlite3.OperationalError:  # the service has not made its tables yet
        return {}


def _drained(ws: Workspace, proc: subprocess.Popen[str]) -> str:
    """Every job consumed (the ledger says so), then SIGTERM: exit 0; its stderr."""
    try:
        done = _until(lambda: _counts(ws) == {"consumed": JOBS})
        assert done, ws.view().status_counts()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return err


def test_a_log_on_a_full_device_is_said_once_and_the_service_works_on(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "full", emulator=emulator)
    err = _drained(ws, _serve(ws, "/dev/full"))
    said = [line for line in err.splitlines() if "cannot be written" in line]
    assert said == [
        "reclaim-tui: the log /dev/full cannot be written (No space left on device);"
        " its lines are dropped until it can"
    ], err


def test_a_log_whose_disk_fills_mid_run_is_said_once_and_the_service_works_on(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "fills", emulator=emulator)
    log = ws.root / "run.log"
    limit = 8 << 20  # the ledger and its WAL stay far below it; the log is near it
    room = len(str(ws.db)) + 180  # the `ready` line (which names the ledger), not one more
    log.write_bytes(b"x" * (limit - room - 1) + b"\n")
    err = _drained(ws, _serve(ws, str(log), max_file_bytes=limit))
    said = [line for line in err.splitlines() if "cannot be written" in line]
    assert said == [
        f"reclaim-tui: the log {log} cannot be written (File too large);"
        " its lines are dropped until it can"
    ], err
    written = log.read_bytes()[limit - room :].decode().splitlines()
    assert '"event":"ready"' in written[0], written  # said while there was room
    assert len(log.read_bytes()) <= limit


def test_a_log_in_a_missing_folder_is_exit_2(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws = Workspace(tmp_path / "nofolder", emulator=emulator)
    proc = _serve(ws, str(ws.root / "nowhere" / "run.log"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "cannot open it (No such file or directory)" in err and "Traceback" not in err
