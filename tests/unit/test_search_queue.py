"""The text index's queues moved by the writer, not a trigger per row (issue 39, item 2).

Migration 9 drops the triggers that counted a queue at every row queued
for the text index (a b-tree count per new job and per handle set) and
moved it at SEARCH_BATCH rows. The ledger's write transactions move the
queues instead, once this process queued SEARCH_BATCH rows (new jobs,
handles set, rows pruned), in the transaction that queued the last of them.
A ledger of the old schema, made by the old code (tests/fixtures/ledgers/),
is brought to the new one when it is opened, its search unchanged.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.prune import prune
from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, SEARCH_BATCH
from reclaim_tui.core.ledger.transfer import copy_ledger
from reclaim_tui.core.models import Actor, JobSpec, Status, Transition
from tests.helpers.pages import walk

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
NOW = 1_800_000_000.0
ME = "me|1|a"
#: the triggers of the text index a ledger has from migration 9 on
TRIGGERS = ["handles_fts_update", "jobs_fts_delete", "jobs_fts_insert", "jobs_fts_update"]


def _spec(text: str) -> str:
    return JobSpec(input=text, model="m").to_json()


def _triggers(db: Path) -> list[str]:
    with closing(sqlite3.connect(db)) as con:
        rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        return [r[0] for r in rows]


def _queued(db: Path) -> tuple[int, int]:
    with closing(sqlite3.connect(db)) as con:
        text = con.execute("SELECT COUNT(*) FROM jobs_fts_pending").fetchone()[0]
        return text, con.execute("SELECT COUNT(*) FROM handles_fts_pending").fetchone()[0]


def _unindexed(db: Path) -> int:
    """New rows the text index has yet to take (above its mark)."""
    with closing(sqlite3.connect(db)) as con:
        sql = "SELECT COUNT(*) FROM jobs WHERE id > (SELECT top FROM jobs_fts_top)"
        return int(con.execute(sql).fetchone()[0])


async def _found(db: Path, text: str) -> list[str]:
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    try:
        return await walk(reader, View(filter=RowFilter(text=text)), 50)
    finally:
        await reader.close()


async def test_no_trigger_counts_the_queue_per_row(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    await (await open_ledger(db)).close()
    assert _triggers(db) == TRIGGERS


async def test_inserts_and_handles_move_the_queue_once_it_is_full(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        first = [f"a{n:05d}" for n in range(SEARCH_BATCH - 1)]
        await ledger.insert_jobs([(k, _spec(f"prompt {k}"), "m") for k in first], "test")
        # Not yet: read as new rows (migration 10: above the mark, no queue row).
        assert _queued(db) == (0, 0) and _unindexed(db) == SEARCH_BATCH - 1
        assert await _found(db, "prompt a00007") == ["a00007"]
        await ledger.insert_jobs([("b00000", _spec("prompt b00000"), "m")], "test")
        assert _queued(db) == (0, 0) and _unindexed(db) == 0
        # Handles set by the engine's group commits count too.
        claim = await ledger.claim_sendable(ME, limit=SEARCH_BATCH, lease_seconds=60)
        keys = sorted(r.idem for r in claim.rows)
        assert len(keys) == SEARCH_BATCH
        await ledger.write_batch(ME, Actor.TICK, sending=keys)
        half = SEARCH_BATCH // 2
        for part, queued in ((keys[:half], (0, half)), (keys[half:], (0, 0))):
            moves = [_submitted(k, NOW) for k in part]
            _, applied = await ledger.write_batch(ME, Actor.TICK, transitions=moves)
            assert applied == part and _queued(db) == queued
    finally:
        await ledger.close()
    assert await _found(db, "int-b00000") == ["b00000"]


async def test_a_prune_moves_the_queue_of_the_rows_it_deleted(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        keys = [f"p{n:05d}" for n in range(SEARCH_BATCH)]
        await ledger.insert_jobs([(k, _spec(f"old {k}"), "m") for k in keys], "test")
        async with ledger.write() as con:
            await con.execute("UPDATE jobs SET status = 'consumed', state_since = 0")
        report = await prune(ledger, older_than_s=60, now=NOW, statuses=[Status.CONSUMED])
        assert report.pruned == SEARCH_BATCH
    finally:
        await ledger.close()
    assert _queued(db) == (0, 0)
    assert await _found(db, "old p0000") == []


async def test_a_ledger_of_the_old_schema_is_upgraded(tmp_path: Path) -> None:
    """The dump is a ledger made by 40b057a's own code (fixtures/ledgers/make.py)."""
    db = tmp_path / "v7.db"
    with closing(sqlite3.connect(db)) as con:
        con.executescript((FIXTURES / "sqlite-v7-40b057a.sql").read_text())
        assert con.execute("PRAGMA user_version").fetchone()[0] == 7
        keys = [r[0] for r in con.execute("SELECT idem FROM jobs ORDER BY id")]
    assert "jobs_fts_move" in _triggers(db)
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        assert await ledger.schema_version() == SCHEMA_VERSION == 11
    finally:
        await ledger.close()
    assert _triggers(db) == TRIGGERS
    assert keys and await _found(db, keys[0]) == [keys[0]]


async def test_a_ledger_at_version_8_is_upgraded(tmp_path: Path) -> None:
    db = tmp_path / "v8.db"
    with closing(sqlite3.connect(db)) as con:
        for migration in MIGRATIONS[:8]:
            con.executescript(migration)
        con.execute(
            "INSERT INTO jobs(idem, spec, model, status, created_at, state_since, updated_at)"
            " VALUES ('kept-row', ?, 'm', 'reserving', 0, 0, 0)",
            (_spec("a prompt kept"),),
        )
        con.execute("PRAGMA user_version = 8")
        con.commit()
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        assert await ledger.schema_version() == SCHEMA_VERSION
        got = await ledger.insert_jobs([("new-row", _spec("a prompt new"), "m")], "test")
        assert got == (["new-row"], [])
    finally:
        await ledger.close()
    assert _triggers(db) == TRIGGERS
    assert sorted(await _found(db, "a prompt")) == ["kept-row", "new-row"]


def _submitted(idem: str, now: float) -> Transition:
    changes = {"handle": f"int-{idem}", "inflight": 0, "submitted_at": now, "next_at": now}
    return Transition(idem, Status.RESERVING, Status.SUBMITTED, "created", changes, release=False)


async def test_a_copied_ledger_has_its_rows_in_the_index(tmp_path: Path) -> None:
    source = await open_ledger(tmp_path / "from.db", clock=ManualClock(NOW))
    target = await open_ledger(tmp_path / "to.db", clock=ManualClock(NOW))
    try:
        keys = [f"c{n:03d}" for n in range(30)]
        await source.insert_jobs([(k, _spec(f"copied {k}"), "m") for k in keys], "test")
        await copy_ledger(source, target)
    finally:
        await source.close()
        await target.close()
    assert _queued(tmp_path / "to.db") == (0, 0) and _unindexed(tmp_path / "to.db") == 0
    assert await _found(tmp_path / "to.db", "copied c007") == ["c007"]
