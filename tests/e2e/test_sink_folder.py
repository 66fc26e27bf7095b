"""Issue 40 item 1: the directory sink never touches files outside its folder.

`articles/.reclaim-tmp` a link to `../victim`, `victim/report.pdf` there, a job
with key `report` ticked twice: the sink listed the temp folder through the
link, took `report.pdf` for a leftover of key `report` (the name up to its
first dot) and deleted it. The sink now refuses a temp folder that is a link
or another user's (exit 4, said) and deletes only temp files of its own
naming, never following a link.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.sinks import TEMP_DIR, DirectorySink
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs


def _workspace(root: Path, emulator: EmulatorProcess) -> tuple[Workspace, Path]:
    ws = Workspace(root, emulator=emulator, use_recording_sink=False)
    victim = root / "victim"
    victim.mkdir()
    (victim / "report.pdf").write_bytes(b"%PDF keep me")
    return ws, victim


def test_a_temp_folder_linked_elsewhere_is_refused_and_nothing_there_deleted(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws, victim = _workspace(tmp_path / "link", emulator)
    ws.out.mkdir()
    (ws.out / TEMP_DIR).symlink_to("../victim")
    jobs = write_jobs(ws.root / "j.jsonl", [{"key": "report", "input": "r"}])
    runs = [ws.tick("--first-poll", "0", jobs=jobs), ws.tick("--first-poll", "0")]
    assert (victim / "report.pdf").read_bytes() == b"%PDF keep me"
    assert sorted(p.name for p in victim.iterdir()) == ["report.pdf"]
    for run in runs:
        assert run.returncode == 4, run.stdout + run.stderr
        assert f"{ws.out / TEMP_DIR} is a link" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr


def test_a_link_made_between_ticks_is_refused_before_any_delivery(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws, victim = _workspace(tmp_path / "later", emulator)
    jobs = write_jobs(ws.root / "j.jsonl", [{"key": "report", "input": "r"}])
    first = ws.cli("submit", str(jobs))
    assert first.returncode == 0, first.stdout + first.stderr
    ws.out.mkdir(exist_ok=True)
    (ws.out / TEMP_DIR).symlink_to("../victim")
    codes = []
    for _ in range(10):  # until the row is due and a pass would deliver it
        run = ws.tick()
        codes.append(run.returncode)
        if run.returncode != 0:
            break
        time.sleep(max(0.0, ws.view().seconds_until_due() or 0.0) + 0.05)
    assert codes[-1] == 4, run.stdout + run.stderr
    assert f"{ws.out / TEMP_DIR} is a link" in run.stderr, run.stderr
    assert (victim / "report.pdf").read_bytes() == b"%PDF keep me"
    assert ws.view().status_counts().get("consumed", 0) == 0
    (ws.out / TEMP_DIR).unlink()  # the operator removes the link: delivery goes on
    ws.settle()
    assert ws.view().status_counts() == {"consumed": 1}
    assert (ws.out / "report.md").exists() and (ws.out / TEMP_DIR).is_dir()
    assert (victim / "report.pdf").exists()


def _result(idem: str) -> StoredResult:
    return StoredResult(idem, "emu-1", "text", None, '{"id": "emu-1"}', 0.0)


async def test_only_temp_files_of_its_own_naming_are_deleted(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path / "out")
    temp = tmp_path / "out" / TEMP_DIR
    temp.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_text("not the sink's")
    (temp / "report.pdf").write_text("a user's file")  # the key's name, not a temp file
    (temp / "report.md.77.tmp").symlink_to(elsewhere)  # a temp name, but a link
    (temp / "report.json.99.tmp").mkdir()  # a temp name, but a folder
    stale = temp / "report.md.12.tmp"
    stale.write_text("half")  # a dead delivery's own temp file
    await sink.deliver("report", _result("report"))
    assert (tmp_path / "out" / "report.md").read_text() == "text"
    assert elsewhere.read_text() == "not the sink's"
    assert sorted(p.name for p in temp.iterdir()) == [
        "report.json.99.tmp",
        "report.md.77.tmp",
        "report.pdf",
    ]


async def test_a_temp_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    from reclaim_tui.errors import SinkFolderError  # here: the module imports on the parent

    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    sink = DirectorySink(tmp_path / "out")
    temp = tmp_path / "out" / TEMP_DIR
    temp.mkdir(parents=True)
    os.chown(temp, 4321, 4321)
    with pytest.raises(SinkFolderError, match="belongs to user 4321"):
        sink.check()
    with pytest.raises(SinkFolderError, match="belongs to user 4321"):
        await sink.deliver_many([("report", _result("report"))])
    assert not (tmp_path / "out" / "report.md").exists()


async def test_a_temp_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    from reclaim_tui.errors import SinkFolderError

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / TEMP_DIR).write_text("a file")
    with pytest.raises(SinkFolderError, match="not a folder"):
        await DirectorySink(tmp_path / "out").deliver_many([("report", _result("report"))])
