"""Another file put in a SQLite ledger's place while nothing ran, and an idle
tick on a ledger it may not write (core/ledger/identity.py, sqlite/idle.py).

The marker was only read for a file that was empty or missing. Another
ledger's file restored over this one (a wrong restore) was opened as this
ledger, its marker rewritten to the other's id, and every job of the jobs
file sent again; an empty SQLite file (a header, no tables) was made a new
ledger. The idle tick's quick look reported "idle" (exit 0) on a ledger
file it could not write, since WAL's write lock is taken without writing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.identity import LedgerReplacedError
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite import idle
from reclaim_tui.core.models import JobSpec

NOW = 1_800_000_000.0
SPEC = JobSpec(input="a job", model="m").to_json()


async def _made(db: Path, key: str) -> str:
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    await ledger.insert_jobs([(key, SPEC, "m")], "test")
    ledger_id = ledger.ledger_id
    await ledger.close()
    assert ledger_id is not None
    return ledger_id


def _marker(db: Path) -> str:
    return Path(f"{db}.ledger-id").read_text(encoding="utf-8").strip()


async def test_another_ledgers_file_restored_in_its_place_is_refused(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "l.db", tmp_path / "b" / "l.db"
    a.parent.mkdir()
    b.parent.mkdir()
    mine, theirs = await _made(a, "ka"), await _made(b, "kb")
    shutil.copyfile(b, a)
    assert not idle.nothing_due(str(a), busy_timeout=5.0, now=NOW)  # the full tick decides
    with pytest.raises(LedgerReplacedError, match=f"says ledger {mine} was here"):
        await open_ledger(a, clock=ManualClock(NOW))
    assert _marker(a) == mine  # not rewritten to the other's id
    assert theirs != mine


async def test_an_older_copy_of_the_same_ledger_is_its_own(tmp_path: Path) -> None:
    db, copy = tmp_path / "l.db", tmp_path / "backup.db"
    mine = await _made(db, "k1")
    shutil.copyfile(db, copy)
    await _made(db, "k2")
    shutil.copyfile(copy, db)  # a restore of this ledger's backup
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    assert ledger.ledger_id == mine
    await ledger.close()


async def test_an_empty_sqlite_file_in_a_ledgers_place_is_not_made_a_new_one(
    tmp_path: Path,
) -> None:
    db = tmp_path / "l.db"
    mine = await _made(db, "k1")
    for side in ("", "-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with sqlite3.connect(db) as empty:  # a header, no tables
        empty.execute("PRAGMA journal_mode = WAL")
    with pytest.raises(LedgerReplacedError, match="holds no ledger"):
        await open_ledger(db, clock=ManualClock(NOW))
    with sqlite3.connect(db) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == 0  # left as it was
    assert _marker(db) == mine


async def test_the_idle_look_is_not_idle_on_a_ledger_it_may_not_write(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))  # nothing due in it: idle
    await ledger.close()
    writable = sqlite3.connect(db, isolation_level=None)
    try:
        assert idle._look(writable, str(db), NOW)  # idle where it may write
    finally:
        writable.close()
    # As a process that may not write the file opens it (root without
    # CAP_DAC_OVERRIDE, or another user, on a file of mode 444).
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            idle._look(conn, str(db), NOW)
    finally:
        conn.close()
