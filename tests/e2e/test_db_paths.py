"""Issue 40 item 14: `--db` naming something that is not a ledger file, and
the control socket given a key that is no job key.

`status --db <fifo>` blocked for ever (SQLite opened the pipe and waited
for a writer); `--db /dev/null` and `--db :memory:` said "needs a
migration" (an empty database); `--db <a folder>` said "disk I/O error".
Each now says what is wrong (exit 4), at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, run_cli, write_jobs


def _status(db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reclaim_tui", "status", "--db", db],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,  # a pipe blocked the parent's status for ever: the timeout fails it
    )


@pytest.mark.parametrize(
    ("make", "said"),
    [
        ("fifo", "is a pipe, not a ledger file"),
        ("folder", "is a folder, not a ledger file"),
        ("/dev/null", "/dev/null is a device, not a ledger file"),
        (":memory:", ":memory:: an in-memory database holds no ledger"),
    ],
)
def test_a_db_that_is_no_ledger_file_is_named_for_what_it_is(
    tmp_path: Path, make: str, said: str
) -> None:
    if make == "fifo":
        db = str(tmp_path / "ledger.db")
        os.mkfifo(db)
    elif make == "folder":
        db = str(tmp_path / "ledgers")
        os.mkdir(db)
    else:
        db = make
    out = _status(db)
    assert out.returncode == 4, out.stdout + out.stderr
    assert said in out.stderr, out.stderr
    assert "migration" not in out.stderr and "disk I/O" not in out.stderr


@pytest.mark.parametrize(
    "db", ["", ":memory:", "file::memory:", "file:l.db", "file:l.db?mode=memory"]
)
@pytest.mark.parametrize("command", ["tick", "submit"])
def test_a_db_that_keeps_nothing_is_refused_before_a_job_is_sent(
    tmp_path: Path, emulator: EmulatorProcess, db: str, command: str
) -> None:
    """`--db "$LEDGER"` with the variable unset, an in-memory database, an
    SQLite URI: each took the jobs, sent them (paid) and kept nothing, so
    the next run sent them again; a `file:` URI also opened another file
    than the one the checks beside the ledger looked at."""
    ws = Workspace(tmp_path / "w", emulator=emulator)
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "a job"}])
    flags = ws.engine_flags(command)
    flags[flags.index("--db") + 1] = db
    args = [command, *flags, *(["--jobs", str(jobs)] if command == "tick" else [str(jobs)])]
    creates = emulator.stats()["calls"]["create"]
    out = run_cli(args, env=ws.env(), cwd=ws.root)
    assert out.returncode == 4, out.stdout + out.stderr
    assert "give the" in out.stderr, out.stderr
    assert emulator.stats()["calls"]["create"] == creates
    assert os.listdir(ws.root) == []  # nothing made beside it either
