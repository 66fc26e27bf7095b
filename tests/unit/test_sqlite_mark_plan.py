"""Marking a batch's rows as sent (the send pass's group commit on SQLite,
core/ledger/sqlite/thread_writes.py) costs what the batch does, not what
the ledger holds: the statement finds its rows by their keys. Searched by
status instead (the planner's choice without statistics), it read every
`reserving` row to find the few it marks, so a large submit's send pass
grew with the square of its size. Counted in SQLite's virtual machine
steps (a progress handler called at every instruction), never timed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite import thread_writes
from reclaim_tui.core.models import JobSpec
from tests.helpers.vm_steps import counted_steps

NOW = 1_800_000_000.0
ME = "host-a|100|me"


async def _ledger_of(path: Path, rows: int) -> None:
    """`rows` reserving rows, the first leased to ME."""
    ledger = await open_ledger(path, clock=ManualClock(NOW))
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        await ledger.insert_jobs([(f"k{n:06d}", spec, "m") for n in range(rows)], "test")
    finally:
        await ledger.close()
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE jobs SET lease_owner = ?, lease_until = ? WHERE idem = 'k000000'",
            (ME, NOW + 60),
        )


def _steps_to_mark_one(path: Path) -> int:
    """The virtual machine instructions of marking one leased row."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        batch = thread_writes.prepare(ME, "tick", ["k000000"], (), NOW)
        with counted_steps(db) as steps:
            marked, _, _ = thread_writes.run(db, batch)
        db.execute("ROLLBACK")
    finally:
        db.close()
    assert [r[1] for r in marked] == ["k000000"]
    return steps[0]


async def test_marking_a_row_reads_no_other_reserving_row(tmp_path: Path) -> None:
    await _ledger_of(tmp_path / "few.db", 10)
    await _ledger_of(tmp_path / "many.db", 2000)
    few = _steps_to_mark_one(tmp_path / "few.db")
    many = _steps_to_mark_one(tmp_path / "many.db")
    # The same lookup by key however many rows wait to be sent (searched
    # by status, the 2,000-row ledger took some thirty times the steps).
    assert many == few, (few, many)
