"""Issue 40 item 1: the default sink never touches files outside its folder.

`articles/.reclaim-tmp` a link to `../victim`, `victim/report.pdf` there, a job
with key `report` ticked twice: the sink listed the temp folder through the
link, took `report.pdf` for a leftover of key `report` (the name up to its
first dot) and deleted it. The sink now refuses a temp folder that is a link,
not a folder or another user's (exit 4, one line saying so), before any pass.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reclaim_tui.core.sinks import TEMP_DIR
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs

NOBODY = 65534


def _workspace(root: Path, emulator: EmulatorProcess) -> tuple[Workspace, Path]:
    ws = Workspace(root, emulator=emulator, use_recording_sink=False)  # the default sink
    victim = root / "victim"
    victim.mkdir()
    (victim / "report.pdf").write_bytes(b"%PDF keep me")
    ws.out.mkdir()
    return ws, victim


def _two_ticks(ws: Workspace) -> list[subprocess.CompletedProcess[str]]:
    """The attack's two ticks of a job keyed `report`: the first submits it,
    the second (once it is due) delivers it."""
    jobs = write_jobs(ws.root / "j.jsonl", [{"key": "report", "input": "r"}])
    runs = [ws.tick(jobs=jobs)]
    if Path(ws.db).exists():  # the first tick made the ledger: wait until the row is due
        wait = ws.view().seconds_until_due()
        time.sleep(max(0.0, wait or 0.0) + 0.05)
    runs.append(ws.tick())
    return runs


def _events(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _until(predicate, limit: float = 120.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _refused(run: subprocess.CompletedProcess[str], start: str) -> None:
    """Exit 4, and one line on stderr saying why and what to do."""
    assert run.returncode == 4, run.stdout + run.stderr
    said = run.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(start), run.stderr
    assert said[0].endswith("(remove it; the sink makes it again)"), run.stderr


def test_a_temp_folder_linked_elsewhere_is_refused_and_nothing_there_deleted(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws, victim = _workspace(tmp_path / "link", emulator)
    (ws.out / TEMP_DIR).symlink_to("../victim")
    runs = _two_ticks(ws)
    assert sorted(p.name for p in victim.iterdir()) == ["report.pdf"], [r.stderr for r in runs]
    assert (victim / "report.pdf").read_bytes() == b"%PDF keep me"
    for run in runs:
        _refused(
            run, f"error: {ws.out / TEMP_DIR} is a link: the sink writes only in a temp folder"
        )
    assert (ws.out / TEMP_DIR).is_symlink()  # said, not repaired behind the operator's back


def test_a_temp_folder_of_another_user_is_refused(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    ws, _ = _workspace(tmp_path / "owner", emulator)
    temp = ws.out / TEMP_DIR
    temp.mkdir()
    (temp / "report.pdf").write_bytes(b"theirs")
    os.chown(temp, NOBODY, NOBODY)
    runs = _two_ticks(ws)
    for run in runs:
        _refused(run, f"error: {temp} belongs to user {NOBODY}, not to this one (0)")
    assert sorted(p.name for p in temp.iterdir()) == ["report.pdf"]
    assert not (ws.out / "report.md").exists()


def test_a_temp_folder_that_is_a_file_is_refused(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws, _ = _workspace(tmp_path / "file", emulator)
    (ws.out / TEMP_DIR).write_text("a file of the user's")
    runs = _two_ticks(ws)
    for run in runs:
        _refused(run, f"error: {ws.out / TEMP_DIR} is not a folder")
    assert (ws.out / TEMP_DIR).read_text() == "a file of the user's"


def test_the_temp_folder_it_makes_is_its_own_and_delivery_goes_on(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    """Once the link is removed the sink makes its folder (0700) and delivers."""
    ws, victim = _workspace(tmp_path / "after", emulator)
    (ws.out / TEMP_DIR).symlink_to("../victim")
    assert [run.returncode for run in _two_ticks(ws)] == [4, 4]
    (ws.out / TEMP_DIR).unlink()  # the remedy the message gives
    jobs = write_jobs(ws.root / "j.jsonl", [{"key": "report", "input": "r"}])
    assert ws.tick(jobs=jobs).returncode == 0
    ws.settle()
    assert ws.view().status_counts() == {"consumed": 1}
    assert (ws.out / "report.md").exists()
    info = (ws.out / TEMP_DIR).lstat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o700, os.geteuid())
    assert list((ws.out / TEMP_DIR).iterdir()) == []
    assert sorted(p.name for p in victim.iterdir()) == ["report.pdf"]


def test_a_link_made_under_a_running_service_stops_it_at_the_delivery(tmp_path: Path) -> None:
    """The folder was the sink's own when the service started; it is swapped
    for a link while the job runs (4 s at this emulator): the delivery is
    refused, the service ends with exit 4 and the row stays `done`."""
    with EmulatorProcess(tmp_path, latency=4.0) as emu:
        ws, victim = _workspace(tmp_path / "svc", emu)
        jobs = write_jobs(ws.root / "j.jsonl", [{"key": "report", "input": "r"}])
        submitted = ws.cli("submit", str(jobs), "--no-send")
        assert submitted.returncode == 0, submitted.stderr
        temp = ws.out / TEMP_DIR
        temp.mkdir(mode=0o700)  # as an earlier delivery left it
        log = ws.root / "run.log"
        args = ["run", *ws.engine_flags("run"), "--log", str(log), "--idle-sleep", "0.1"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "reclaim_tui", *args],
            env=ws.env(),
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert _until(lambda: any(e["event"] == "pass" for e in _events(log)))  # sent
            temp.rmdir()
            temp.symlink_to("../victim")
            # Made while the job still runs: before its delivery.
            assert ws.view().rows()["report"]["status"] == "submitted"
            assert _until(
                lambda: (
                    proc.poll() is not None or ws.view().rows()["report"]["status"] == "consumed"
                )
            )
            assert proc.poll() == 4, ws.view().rows()["report"]
            stderr = proc.communicate(timeout=60)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert stderr.strip().splitlines()[-1].startswith(f"error: {temp} is a link:"), stderr
    assert [e["code"] for e in _events(log) if e["event"] == "stopped"] == [4]
    assert sorted(p.name for p in victim.iterdir()) == ["report.pdf"]
    assert ws.view().rows()["report"]["status"] == "done"
