"""Bad input through the real CLI (issue 22, points 5, 7 and 9): each is
refused with a clear message and its exit code, nothing lost, no traceback.
`python -m reclaim_tui` in a fresh process, as tests/e2e/test_cli.py does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.helpers import run_cli
from tests.helpers.procs import write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def _specs(db: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT idem, spec FROM jobs ORDER BY id").fetchall()
    finally:
        conn.close()


def test_a_key_already_in_the_ledger_for_another_spec_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ledger.db"
    first = write_jobs(tmp_path / "first.jsonl", [{"key": "weekly", "input": "old text"}])
    second = write_jobs(
        tmp_path / "second.jsonl",
        [{"input": "a job of its own"}, {"key": "weekly", "input": "new text"}],
    )
    submit = ["submit", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k"]
    run_cli([*submit, str(first)], timeout=60)
    before = _specs(db)
    assert [idem for idem, _ in before] == ["weekly"]
    # The same job again is already present (exit 0: not a clash).
    again = run_cli([*submit, str(first)], timeout=60)
    assert again.returncode == 0 and "1 already in the ledger" in again.stdout, again.stderr
    clash = run_cli([*submit, str(second)], timeout=60)
    assert clash.returncode == 3, (clash.stdout, clash.stderr)
    assert "Traceback" not in clash.stderr
    assert "'weekly'" in clash.stderr
    assert "'old text'" in clash.stderr and "'new text'" in clash.stderr
    assert _specs(db) == before, "nothing was reserved"
