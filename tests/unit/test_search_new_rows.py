"""New jobs reach the text index by their id, not by a queue row each
(issue 39, item 2).

Migration 10 keeps the largest id the text index was brought to
(jobs_fts_top): rows above it are the new ones, which the writer's move
indexes and readers take as candidates, so inserting a job writes nothing
for the index (until migration 9 its trigger wrote a queue row per job, and
the move deleted it again). Rows at or below the mark are queued as before
when their key or spec changes or they are deleted. Counted: the queue rows
and SQLite's row changes an insert makes; the filter still finds exactly
the rows LIKE finds, and FTS5's integrity-check holds after a move, also
when SQLite gives a deleted largest id to a new row. A ledger of schema 9
made by the old code (tests/fixtures/ledgers/) is brought to 10.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION, SEARCH_FLUSH_SQL
from reclaim_tui.core.models import JobSpec
from tests.helpers.pages import walk

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
NOW = 1_800_000_000.0


def _spec(text: str) -> str:
    return JobSpec(input=text, model="m").to_json()


def _state(db: Path) -> tuple[int, int, int]:
    """(queued for the key/input index, the mark, rows above it)."""
    with closing(sqlite3.connect(db)) as con:
        queued = con.execute("SELECT COUNT(*) FROM jobs_fts_pending").fetchone()[0]
        (top,) = con.execute("SELECT top FROM jobs_fts_top").fetchone()
        above = con.execute("SELECT COUNT(*) FROM jobs WHERE id > ?", (top,)).fetchone()[0]
    return queued, top, above


def _move_and_check(db: Path) -> None:
    """The writer's move, then FTS5's check that the indexes hold exactly
    what jobs says."""
    with closing(sqlite3.connect(db, isolation_level=None)) as con:
        con.executescript(SEARCH_FLUSH_SQL)
        for index in ("jobs_fts", "handles_fts"):
            con.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")


async def _found(db: Path, text: str) -> list[str]:
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    try:
        return sorted(await walk(reader, View(filter=RowFilter(text=text)), 50))
    finally:
        await reader.close()


async def test_an_insert_writes_no_row_for_the_index(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    assert isinstance(ledger, SqliteLedger)
    try:
        keys = [f"new-{n:03d}" for n in range(200)]
        async with ledger.write() as con:
            before = con.total_changes
        await ledger.insert_jobs([(k, _spec(f"prompt {k}"), "m") for k in keys], "test")
        async with ledger.write() as con:
            changed = con.total_changes - before
    finally:
        await ledger.close()
    # A job row and its event each: nothing queued for the index.
    assert changed == 2 * len(keys), f"inserting {len(keys)} jobs changed {changed} rows"
    assert _state(db) == (0, 0, len(keys))
    assert await _found(db, "prompt new-017") == ["new-017"]
    assert await _found(db, "new-01") == [f"new-01{n}" for n in range(10)]
    _move_and_check(db)
    assert _state(db) == (0, len(keys), 0)
    assert await _found(db, "new-01") == [f"new-01{n}" for n in range(10)]


async def test_a_largest_id_deleted_and_given_again_is_found(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        await ledger.insert_jobs([(f"k{n}", _spec(f"first {n}"), "m") for n in range(3)], "t")
        _move_and_check(db)
        assert _state(db) == (0, 3, 0)
        # Deleted and given again before the next move: the queue row of the
        # delete names the id, the move indexes the new row under it.
        async with ledger.write() as con:
            await con.execute("DELETE FROM events WHERE job = 3")
            await con.execute("DELETE FROM jobs WHERE id = 3")
        await ledger.insert_jobs([("again", _spec("second life"), "m")], "t")
        with closing(sqlite3.connect(db)) as con:
            assert con.execute("SELECT id FROM jobs WHERE idem = 'again'").fetchone() == (3,)
        assert _state(db) == (1, 3, 0)
        assert await _found(db, "second life") == ["again"]
        assert await _found(db, "first 2") == []
        _move_and_check(db)
        assert await _found(db, "second life") == ["again"]
        # Deleted, moved (the mark falls back to 2), then given again: new.
        async with ledger.write() as con:
            await con.execute("DELETE FROM events WHERE job = 3")
            await con.execute("DELETE FROM jobs WHERE id = 3")
        _move_and_check(db)
        assert _state(db) == (0, 2, 0)
        await ledger.insert_jobs([("third", _spec("third life"), "m")], "t")
        assert _state(db) == (0, 2, 1)
        assert await _found(db, "life") == ["third"]
        _move_and_check(db)
        assert await _found(db, "life") == ["third"]
    finally:
        await ledger.close()


async def test_changes_to_rows_not_yet_indexed_queue_nothing(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        await ledger.insert_jobs([("old", _spec("old prompt"), "m")], "t")
        _move_and_check(db)
        await ledger.insert_jobs([("fresh", _spec("fresh prompt"), "m")], "t")
        async with ledger.write() as con:
            await con.execute("UPDATE jobs SET spec = ? WHERE idem = 'fresh'", (_spec("edited"),))
            await con.execute("UPDATE jobs SET spec = ? WHERE idem = 'old'", (_spec("renamed"),))
        assert _state(db) == (1, 1, 1)  # the indexed row alone, with what the index holds
        assert await _found(db, "prompt") == []
        assert await _found(db, "edited") == ["fresh"]
        assert await _found(db, "renamed") == ["old"]
        _move_and_check(db)
        assert await _found(db, "prompt") == []
        assert await _found(db, "edited") == ["fresh"]
        assert await _found(db, "renamed") == ["old"]
    finally:
        await ledger.close()


async def test_a_ledger_of_schema_9_is_upgraded(tmp_path: Path) -> None:
    """The dump is a ledger made by f77ae22's own code (fixtures/ledgers/make.py),
    its five rows still queued for the index as that code queued them."""
    db = tmp_path / "v9.db"
    with closing(sqlite3.connect(db)) as con:
        con.executescript((FIXTURES / "sqlite-v9-f77ae22.sql").read_text())
        assert con.execute("PRAGMA user_version").fetchone()[0] == 9
        assert con.execute("SELECT COUNT(*) FROM jobs_fts_pending").fetchone()[0] == 5
        keys = [r[0] for r in con.execute("SELECT idem FROM jobs ORDER BY id")]
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        assert await ledger.schema_version() == SCHEMA_VERSION == 11
        assert _state(db) == (0, 5, 0)  # what was queued is in the index
        await ledger.insert_jobs([("k-cafe-new", _spec("un café noir"), "m")], "t")
        assert _state(db) == (0, 5, 1)
    finally:
        await ledger.close()
    assert await _found(db, "k-cafe") == sorted([*(k for k in keys if "cafe" in k), "k-cafe-new"])
    assert await _found(db, "café") == ["k-cafe-1", "k-cafe-new"]
    _move_and_check(db)
    assert await _found(db, "noir") == ["k-cafe-new"]
