"""Through the real CLI: `export -o`, `prune --archive`, `run --log` and
`run --control` naming the ledger or a file beside it are refused (exit 2,
the ledger named) before anything is written or deleted; the ledger and its
marker are as they were. (The check itself: tests/unit/test_output_onto_ledger.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.procs import clean_env, run_cli, write_jobs

#: Nothing listens on port 9: nothing here may reach an API.
DEAD_API = "http://127.0.0.1:9"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli([*args, "--db", "l.db"], env=clean_env({"GEMINI_API_KEY": "k"}), cwd=root)


def _ledger(root: Path) -> dict[str, bytes]:
    """A ledger `l.db` in `root` with a reserved and a cancelled job; its files' bytes."""
    jobs = write_jobs(root / "j.jsonl", [{"input": "a", "key": "k1"}, {"input": "b", "key": "k2"}])
    made = _cli(root, "submit", "--no-send", str(jobs))
    assert made.returncode == 0, made.stdout + made.stderr
    cancelled = _cli(root, "cancel", "k2", "--base-url", DEAD_API)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    return _files(root)


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.glob("l.db*")}


def _refused(proc: subprocess.CompletedProcess[str], says: str) -> None:
    assert proc.returncode == 2, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_export_over_the_ledger_is_refused_and_the_ledger_kept(tmp_path: Path) -> None:
    before = _ledger(tmp_path)
    (tmp_path / "link.jsonl").symlink_to("l.db")
    for target in ("l.db", "./l.db", "link.jsonl"):
        out = _cli(tmp_path, "export", "--format", "jsonl", "-o", target)
        _refused(out, f"--output {target}: that is the ledger l.db itself")
        assert _files(tmp_path) == before
    assert _cli(tmp_path, "status").returncode == 0


def test_prune_archive_on_the_marker_is_refused_before_a_row_is_deleted(tmp_path: Path) -> None:
    before = _ledger(tmp_path)
    prune = ["prune", "--older-than", "0", "--status", "cancelled", "--yes"]
    out = _cli(tmp_path, *prune, "--archive", "l.db.ledger-id")
    _refused(out, "that is l.db.ledger-id, the ledger-id marker of the ledger l.db")
    assert _files(tmp_path) == before
    kept = _cli(tmp_path, "show", "k2")
    assert kept.returncode == 0 and "cancelled" in kept.stdout, kept.stdout + kept.stderr


def test_the_service_log_and_socket_beside_the_ledger_are_refused(tmp_path: Path) -> None:
    before = _ledger(tmp_path)
    run = ["run", "--once", "--base-url", DEAD_API]
    _refused(_cli(tmp_path, *run, "--log", "./l.db"), "--log ./l.db: that is the ledger l.db")
    (tmp_path / "sock").symlink_to("l.db-journal")
    out = _cli(tmp_path, *run, "--control", "sock")
    _refused(out, "--control sock: that is l.db-journal, the rollback journal")
    assert _files(tmp_path) == before
