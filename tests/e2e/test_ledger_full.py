"""Issue 22 point 10: a full disk under the ledger. The service waits and
says so (`ledger_unavailable`, as for a locked ledger), and goes on once
there is room (`ledger_back`): nothing lost, no exit 4.

The disk is real: a small tmpfs holding the ledger, filled by a file."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs

JOBS = 6


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass  # no room left
    finally:
        os.close(fd)


def _lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _until(predicate, limit: float = 90.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while True:
        try:
            if predicate():
                return True
        except sqlite3.Error:  # the service has not made the ledger yet
            pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_full_disk_under_the_ledger_makes_the_service_wait_then_go_on(
    tmp_path: Path, small_disk: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "full", emulator=emulator)
    ws.db = small_disk / "ledger.db"
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": f"room {i}"} for i in range(JOBS)])
    log = ws.root / "run.log"
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
    args += ["--base-url", emulator.base_url, "--api-key", emulator.api_key]
    args += ["--jobs", str(jobs), "--idle-sleep", "0.2", "--first-poll", "3"]
    proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
    filler = small_disk / "filler"
    try:
        # Every job sent; their polls (and the writes of their results) wait.
        assert _until(lambda: ws.view().status_counts().get("submitted", 0) == JOBS)
        _fill(filler)
        assert _until(
            lambda: (
                proc.poll() is not None
                or any(line["event"] == "ledger_unavailable" for line in _lines(log))
            )
        )
        assert proc.poll() is None, _lines(log)[-3:]  # it waits, it did not exit
        waiting = [line for line in _lines(log) if line["event"] == "ledger_unavailable"]
        assert "full" in str(waiting[0]["error"])
        filler.unlink()  # room again
        assert _until(lambda: ws.view().status_counts().get("consumed", 0) == JOBS)
        # Said when the pass that got through ends, after its commits (runner/service.py):
        # the rows can show consumed a moment before the line is written.
        assert _until(lambda: any(line["event"] == "ledger_back" for line in _lines(log)))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    assert code == 0, _lines(log)[-3:]
    assert emulator.create_counts() == {k: 1 for k in ws.view().rows()}
