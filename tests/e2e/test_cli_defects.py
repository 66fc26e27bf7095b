"""Regressions for the CLI defects of issue 15 (items 12 and 13), each run
through the real CLI: `python -m reclaim_tui` in a fresh process with a clean
environment (no API key), as tests/e2e/test_cli.py does."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_cli

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def test_a_missing_db_folder_is_named_and_exits_4(tmp_path: Path) -> None:
    """12f: SQLite only says "unable to open database file"; the CLI names the
    folder and why, with the ledger-error exit code (4)."""
    db = tmp_path / "no-such-folder" / "ledger.db"
    for args in (
        ["tick", "--db", str(db), "--base-url", DEAD_API],
        ["status", "--db", str(db)],
        ["inbox", "--db", str(db), "--listen", "127.0.0.1:0"],
    ):
        proc = run_cli(args, timeout=60)
        assert proc.returncode == 4, (args, proc.stderr)
        assert f"{db.parent} does not exist" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert not db.parent.exists()
