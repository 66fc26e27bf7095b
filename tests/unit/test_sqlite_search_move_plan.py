"""Moving the text index's queues (the writer's move once SEARCH_BATCH rows
were queued, core/ledger/sqlite/writes.py's SEARCH_MOVES) costs what was
queued, not what the ledger holds: each join is driven by the queue, a
lookup of jobs by id a queued row. Joined the other way round, for the
order of ids, every move read the whole of jobs, so a long send pass's
moves grew with the square of its size. Counted in SQLite's virtual
machine steps (a progress handler called at every instruction), never
timed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_FLUSH_SQL
from reclaim_tui.core.ledger.sqlite.writes import SEARCH_MOVES
from reclaim_tui.core.models import JobSpec
from tests.helpers.vm_steps import counted_steps

NOW = 1_800_000_000.0


async def _indexed_ledger(path: Path, rows: int) -> None:
    """`rows` jobs, all in the text index, then the first one's handle set
    and its input changed: one row queued in each queue."""
    ledger = await open_ledger(path, clock=ManualClock(NOW))
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        await ledger.insert_jobs([(f"k{n:06d}", spec, "m") for n in range(rows)], "test")
    finally:
        await ledger.close()
    with sqlite3.connect(path) as db:
        db.executescript(SEARCH_FLUSH_SQL)
        changed = JobSpec(input="another job", model="m").to_json()
        db.execute("UPDATE jobs SET handle = 'h-1', spec = ? WHERE id = 1", (changed,))
        queued = [db.execute(f"SELECT count(*) FROM {q}").fetchone()[0] for q in _QUEUES]
    assert queued == [1, 1]


_QUEUES = ("jobs_fts_pending", "handles_fts_pending")


def _steps_to_move(path: Path) -> int:
    """The virtual machine instructions of one move of the queues."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        with counted_steps(db) as steps:
            for statement in SEARCH_MOVES:
                db.execute(statement)
        found = db.execute("SELECT rowid FROM handles_fts WHERE handles_fts MATCH '\"h-1\"'")
        assert [r[0] for r in found] == [1]
        db.execute("ROLLBACK")
    finally:
        db.close()
    return steps[0]


async def test_a_move_reads_only_the_rows_queued(tmp_path: Path) -> None:
    await _indexed_ledger(tmp_path / "few.db", 10)
    await _indexed_ledger(tmp_path / "many.db", 2000)
    few = _steps_to_move(tmp_path / "few.db")
    many = _steps_to_move(tmp_path / "many.db")
    # The same steps however many rows the index holds (joined from jobs,
    # the 2,000-row ledger's move took many times the steps).
    assert many == few, (few, many)
