"""What a job writes to SQLite's WAL: counted in frames (a page each), not
timed. Every commit appends each page it changed; a page of an index whose
entries of one commit sit far apart is one frame per entry.

The age and updated indexes used to end with the key, which is random: rows
of the same time (a group commit's, a batch of jobs submitted together) were
spread over the whole index, and each group commit rewrote most of its
pages. Since migration 11 they end with the rowid, so a claim's rows, taken
in id order, are neighbours there as well."""

from __future__ import annotations

import collections
import sqlite3
import struct
from contextlib import closing
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

JOBS = 2000
TIME_INDEXES = ("jobs_status_age", "jobs_updated")


def _frames(wal: bytes) -> list[int]:
    """The page number of every frame in a WAL file, in order."""
    page_size = struct.unpack(">I", wal[8:12])[0]
    pages = []
    for offset in range(32, len(wal) - page_size - 23, page_size + 24):
        pages.append(struct.unpack(">I", wal[offset : offset + 4])[0])
    return pages


async def _frames_by_btree(tmp_path: Path) -> collections.Counter[str]:
    """JOBS jobs through every state with no checkpoint: the WAL's frames,
    counted by the b-tree (table or index) that owns each page at the end."""
    clock = ManualClock()
    db = tmp_path / "ledger.db"
    ledger = await open_ledger(db, clock=clock)
    assert isinstance(ledger, SqliteLedger)

    async def sink(idem: str, result: StoredResult) -> None:
        return None

    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(sink),
        owner="wal|1|x",
        config=EngineConfig(concurrency=64, batch_size=2000),
    )
    try:
        await ledger.connection.execute("PRAGMA wal_autocheckpoint = 0")
        await ledger.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        await engine.submit([JobSpec(input=f"wal job {i}", model="m") for i in range(JOBS)])
        clock.advance(5)
        report = await engine.tick()
        assert report.counts["consumed"] == JOBS, report.summary()
        frames = _frames(Path(f"{db}-wal").read_bytes())
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as con:
            owner = {int(p): str(n) for n, p in con.execute("SELECT name, pageno FROM dbstat")}
    finally:
        await ledger.close()
    return collections.Counter(owner.get(p, "?") for p in frames)


async def test_the_time_indexes_take_few_frames_a_job(tmp_path: Path) -> None:
    by_btree = await _frames_by_btree(tmp_path)
    written = sum(by_btree[name] for name in TIME_INDEXES)
    # Counted by each page's owner at the end (an index page freed by a
    # rebalance and taken by a growing table counts as the table's, so this
    # undercounts the indexes): ordered by time then key, about 1,970 of
    # 6,600 frames; by time then id, about 420 of 3,200.
    assert written <= JOBS // 2, f"{written} frames of {TIME_INDEXES} for {JOBS} jobs: {by_btree}"
    assert sum(by_btree.values()) <= 2.2 * JOBS, by_btree
