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

from tests.helpers.procs import clean_env


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
