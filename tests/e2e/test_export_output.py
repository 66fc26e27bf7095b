"""Issue 40 item 5: `export -o` to a missing folder or a full disk.

It ended in a traceback (exit 1, FileNotFoundError / OSError: No space left
on device) and a failed write left a half-written file under the asked name.
Now: exit 2 for a folder that is not there, exit 4 for a write that failed,
a message without a traceback, and the file is the whole export or as it was.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from tests.helpers import Workspace
from tests.helpers.procs import clean_env, write_jobs


def _ledger(root: Path, rows: int) -> Workspace:
    ws = Workspace(root, emulator=None)
    jobs = write_jobs(root / "j.jsonl", [{"input": f"job {n} " + "x" * 200} for n in range(rows)])
    made = ws.cli("submit", str(jobs), "--no-send", engine=False)
    assert made.returncode == 0, made.stdout + made.stderr
    return ws


def _export(
    ws: Workspace, output: str, *, max_file_bytes: int | None = None
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # Python ignores SIGXFSZ: a write past it fails with EFBIG
        # (above 32 KiB: the ledger's shared-memory index is that size)
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    env = clean_env()
    if max_file_bytes is not None:
        # The limit is on every file the process writes: a measured run's own
        # coverage data (written at exit) would fail on it, not the export.
        env = {k: v for k, v in env.items() if not k.startswith("COVERAGE_")}
    return subprocess.run(
        [sys.executable, "-m", "reclaim_tui", "export", "--db", str(ws.db), "-o", output],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )


def test_a_missing_folder_is_exit_2_with_a_message(tmp_path: Path) -> None:
    ws = _ledger(tmp_path, 3)
    out = _export(ws, str(tmp_path / "nowhere" / "rows.jsonl"))
    assert out.returncode == 2, out.stdout + out.stderr
    assert f"the folder {tmp_path / 'nowhere'} does not exist" in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "nowhere").exists()


def test_a_full_device_is_exit_4_with_a_message(tmp_path: Path) -> None:
    ws = _ledger(tmp_path, 3)
    out = _export(ws, "/dev/full")
    assert out.returncode == 4, out.stdout + out.stderr
    assert "No space left on device" in out.stderr and "Traceback" not in out.stderr


def test_a_write_that_fails_half_way_leaves_no_half_file(tmp_path: Path) -> None:
    ws = _ledger(tmp_path, 600)  # ~250 KB of JSON Lines, past the 64 KiB limit below
    target = tmp_path / "rows.jsonl"
    out = _export(ws, str(target), max_file_bytes=65536)
    assert out.returncode == 4, out.stdout + out.stderr
    assert "File too large" in out.stderr and "Traceback" not in out.stderr
    assert not target.exists(), "a half-written export was left under the asked name"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".rows")] == []

    target.write_text("the last good export\n")
    again = _export(ws, str(target), max_file_bytes=65536)
    assert again.returncode == 4, again.stdout + again.stderr
    assert target.read_text() == "the last good export\n"

    whole = _export(ws, str(target))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    lines = target.read_text().splitlines()
    assert len(lines) == 600 and all(json.loads(line)["status"] == "reserving" for line in lines)
