"""Issue 40 item 1: the default sink never touches files outside its folder.

`articles/.reclaim-tmp` a link to `../victim`, `victim/report.pdf` there, a job
with key `report` ticked twice: the sink listed the temp folder through the
link, took `report.pdf` for a leftover of key `report` (the name up to its
first dot) and deleted it. The sink now refuses a temp folder that is a link,
not a folder or another user's (exit 4, one line saying so), before any pass.
"""

from __future__ import annotations

import os
import subprocess
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
