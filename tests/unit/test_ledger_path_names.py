"""A SQLite ledger whose file name holds a character SQLite's URIs give a
meaning to (`#`, `?`, `%`), a space or a letter outside ASCII.

The read-only opens (the console, `status`, `export`, …) and the service's
check of the main file go through a `file:` URI. The path was put in it as it
was: `jobs#1.db` opened `jobs` (the rest read as a fragment, `mode=ro` with
it), so a read command created an empty file named `jobs` and refused with
"needs a migration"; the service's check read no ledger there, and after a
few passes took the ledger for replaced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.identity import changed, snapshot
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec

SPEC = JobSpec(input="a job", model="m").to_json()
NAMES = ["jobs#1.db", "what?.db", "100%25.db", "a b.db", "été.db", "x?mode=rwc.db"]


@pytest.mark.parametrize("name", NAMES)
async def test_a_ledger_named_so_is_read_where_it_is_and_nothing_else_is_made(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / name
    writer = await open_ledger(db, clock=ManualClock(1_800_000_000.0))
    await writer.insert_jobs([("k1", SPEC, "m")], "test")
    await writer.close()
    for path in (db, os.path.relpath(db)):  # as given: absolute, or from here
        reader = await open_ledger(
            path, clock=ManualClock(1_800_000_000.0), readonly=True, create=False
        )
        try:
            assert (await reader.counts())["reserving"][0] == 1
        finally:
            await reader.close()
    # nothing but the ledger's own files (SQLite's -wal and -shm among them)
    assert [n for n in os.listdir(tmp_path) if not n.startswith(name)] == []


@pytest.mark.parametrize("name", NAMES)
async def test_the_services_file_check_reads_a_ledger_named_so(tmp_path: Path, name: str) -> None:
    db = tmp_path / name
    ledger = await open_ledger(db, clock=ManualClock(1_800_000_000.0))
    await ledger.insert_jobs([("k1", SPEC, "m")], "test")
    ledger_id = ledger.ledger_id
    await ledger.close()  # checkpointed: the main file holds the id
    first = snapshot(str(db))
    assert first.stored_id == ledger_id and first.unreadable == 0
    now = first
    for _ in range(5):  # more checks than it takes to call a file unreadable
        now = snapshot(str(db), now)
    assert now.unreadable == 0
    assert ledger_id is not None and changed(ledger_id, first, now) is None
