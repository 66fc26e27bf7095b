"""Files that are not ours are refused untouched; reading works where writing cannot.

- A SQLite file of another program given as `--db` is refused (exit 4)
  without a byte changed: no tables added, no journal mode switched, no
  -wal/-shm files left beside it.
- `status`, `show` and `export` work on a ledger on a read-only mount.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import Workspace
from tests.helpers.procs import write_jobs


@pytest.fixture
def seeded(make_workspace: Callable[..., Workspace]) -> Workspace:
    """A ledger with two submitted rows."""
    ws = make_workspace("seeded")
    proc = ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": "one"}, {"input": "two"}]))
    assert proc.returncode == 0, proc.stderr
    return ws


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reclaim_tui", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("journal", ["delete", "wal"])
@pytest.mark.parametrize("user_version", [0, 7])
def test_a_foreign_sqlite_file_is_refused_untouched(
    tmp_path: Path, journal: str, user_version: int
) -> None:
    db = tmp_path / "someone-elses.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices(total) VALUES (12.5)")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.commit()
    conn.close()
    before = _digest(db)
    siblings = sorted(p.name for p in tmp_path.iterdir())
    for args in (
        ("status", "--db", str(db)),
        ("export", "--db", str(db)),
        ("tick", "--db", str(db), "--base-url", "http://127.0.0.1:9", "--api-key", "k"),
    ):
        proc = _cli(*args, cwd=tmp_path)
        assert proc.returncode == 4, (args, proc.stdout, proc.stderr)
        assert "not a reclaim-tui ledger" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    assert _digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    assert tables == ["invoices"] and mode == journal


@pytest.fixture
def read_only_mount(seeded: Workspace, tmp_path: Path) -> Iterator[Path]:
    """The workspace seen through a read-only bind mount (root ignores file
    modes, so only a mount makes the file really unwritable)."""
    mount = shutil.which("mount")
    target = tmp_path / "ro"
    target.mkdir()
    if mount is None:
        pytest.skip("no mount(8) here")
    bound = subprocess.run(
        [mount, "--bind", str(seeded.db.parent), str(target)], text=True, capture_output=True
    )
    if bound.returncode != 0:
        pytest.skip(f"bind mounts not permitted here: {bound.stderr.strip()}")
    try:
        ro = subprocess.run(
            [mount, "-o", "remount,bind,ro", str(target)], capture_output=True, text=True
        )
        if ro.returncode != 0:
            pytest.skip(f"read-only remount not permitted here: {ro.stderr.strip()}")
        yield target / seeded.db.name
    finally:
        subprocess.run(["umount", str(target)], check=False)


def test_reading_works_on_a_read_only_mount(seeded: Workspace, read_only_mount: Path) -> None:
    db = str(read_only_mount)
    status = _cli("status", "--json", "--db", db, cwd=read_only_mount.parent)
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)
    assert counts["submitted"]["count"] == 2
    export = _cli("export", "--db", db, cwd=read_only_mount.parent)
    assert export.returncode == 0, export.stderr
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(rows) == 2
    show = _cli("show", "--db", db, rows[0]["idem"], cwd=read_only_mount.parent)
    assert show.returncode == 0 and rows[0]["idem"] in show.stdout, show.stderr
    # Writing is still refused with the documented exit code.
    tick = _cli(
        "tick",
        "--db",
        db,
        "--base-url",
        "http://127.0.0.1:9",
        "--api-key",
        "k",
        cwd=read_only_mount.parent,
    )
    assert tick.returncode == 4 and "cannot be written" in tick.stderr, tick.stderr
