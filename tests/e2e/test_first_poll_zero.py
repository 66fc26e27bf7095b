"""Issue 40 item 4: `--first-poll 0` polled a running job in a loop.

A row polled was due again at once (the next poll "now"), and the reclaim
pass claims until nothing is due: one running job, thousands of GETs in a
few seconds, a tick that never ended and a service that never drained on
SIGTERM. Now a pass polls a row at most once, and 0 means "poll at the first
pass" (later polls at ages 2, 4, 8 … s). Counted at the emulator (its admin
stats), never timed.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs


@pytest.fixture(scope="module")
def slow_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    """Every job runs for an hour: it is `in_progress` at every poll of the test."""
    with EmulatorProcess(tmp_path_factory.mktemp("slow-emu"), latency=3600.0) as emu:
        yield emu


def _gets(emu: EmulatorProcess) -> int:
    return int(emu.stats()["calls"]["get"])


def test_a_tick_polls_a_running_job_once_and_ends(
    tmp_path: Path, slow_emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "tick", emulator=slow_emulator)
    jobs = write_jobs(ws.root / "j.jsonl", [{"input": "runs an hour"}])
    before = _gets(slow_emulator)
    done = ws.tick("--first-poll", "0", jobs=jobs, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _gets(slow_emulator) - before == 1  # polled at the first pass, once
    row = next(iter(ws.view().rows().values()))
    assert row["status"] == "submitted" and row["polls"] == 1
    # Not due again at once: the next poll is on the grid, at age 2 s. (A
    # second tick's start is wall time: on a loaded machine it may come
    # after that age, when one poll more is right.)
    assert row["next_at"] >= row["submitted_at"] + 2.0
    again = ws.tick("--first-poll", "0", timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    row = next(iter(ws.view().rows().values()))
    polls = _gets(slow_emulator) - before
    assert polls <= 2 and row["polls"] == polls  # a pass polls a row at most once


def _until(predicate, limit: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_service_polls_on_the_grid_and_drains_on_sigterm(
    tmp_path: Path, slow_emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "run", emulator=slow_emulator)
    jobs = write_jobs(ws.root / "j.jsonl", [{"input": "runs an hour too"}])
    log = ws.root / "run.log"
    before = _gets(slow_emulator)
    args = ["run", *ws.engine_flags("run"), "--first-poll", "0", "--jobs", str(jobs)]
    args += ["--log", str(log), "--idle-sleep", "0.1"]
    proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=ws.env())
    try:
        assert _until(lambda: _gets(slow_emulator) - before >= 1)  # its first poll
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0  # the pass in progress ended: drained
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    row = next(iter(ws.view().rows().values()))
    # One GET per poll the ledger recorded, and the next poll on the grid of
    # ages (2, 4, 8 … s after the create for polls 1, 2, 3 …), never "now".
    assert _gets(slow_emulator) - before == row["polls"] >= 1
    assert row["next_at"] - row["submitted_at"] >= 2 ** row["polls"]
