"""SQLite's age and updated indexes end with the rowid, not the key (migration
11): what a group commit writes to them is a few neighbouring pages
(tests/unit/test_wal_per_job.py). Here: a ledger made by the code before is
brought to them; the console's pages and prune order ties by id and seek
the index for them; a page whose anchor row was deleted skips nothing."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.console.page_sql import page_sql
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import SORTS, View, column_sort
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.prune import prune
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION
from tests.helpers.pages import walk, walk_back

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"
NOW = 1_800_000_000.0
DAY = 86_400.0
#: keys whose order is the reverse of their ids (inserted in this order)
KEYS = [f"k-{n:02d}" for n in range(24, 0, -1)]


def _spec(text: str) -> str:
    return json.dumps({"input": text, "model": "m"})


def _index_columns(con: sqlite3.Connection, index: str) -> list[str]:
    return [r[2] for r in con.execute(f"PRAGMA index_info({index})")]


async def test_a_ledger_of_schema_10_gets_the_indexes_by_id(tmp_path: Path) -> None:
    """The dump is a ledger made by 430de75's own code (fixtures/ledgers/make.py)."""
    db = tmp_path / "v10.db"
    with closing(sqlite3.connect(db)) as con:
        con.executescript((FIXTURES / "sqlite-v10-430de75.sql").read_text())
        assert con.execute("PRAGMA user_version").fetchone()[0] == 10
        assert _index_columns(con, "jobs_status_age") == ["status", "state_since", "idem"]
        assert _index_columns(con, "jobs_updated") == ["updated_at", "idem"]
        before = con.execute("SELECT * FROM jobs ORDER BY id").fetchall()
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        assert await ledger.schema_version() == SCHEMA_VERSION == 11
    finally:
        await ledger.close()
    with closing(sqlite3.connect(db)) as con:
        assert _index_columns(con, "jobs_status_age") == ["status", "state_since"]
        assert _index_columns(con, "jobs_updated") == ["updated_at"]
        assert con.execute("SELECT * FROM jobs ORDER BY id").fetchall() == before
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.fixture
async def tied(tmp_path: Path) -> Path:
    """KEYS in one insert: one time for all (created, state, updated)."""
    db = tmp_path / "ledger.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        await ledger.insert_jobs([(k, _spec(f"tied {k}"), "m") for k in KEYS], "t")
    finally:
        await ledger.close()
    return db


@pytest.mark.parametrize(
    "sort", [*SORTS, column_sort("status", False)], ids=lambda s: f"{s.column}-{s.descending}"
)
@pytest.mark.parametrize("size", [1, 5, 24])
async def test_rows_of_one_time_page_in_id_order_both_ways(
    tied: Path, sort: object, size: int
) -> None:
    view = View(sort=sort)  # type: ignore[arg-type]
    want = KEYS if not view.sort.descending else KEYS[::-1]
    reader = await ConsoleReader.open(tied, clock=ManualClock(NOW))
    try:
        await reader.counts()
        assert await walk(reader, view, size) == want
        assert await walk_back(reader, view, size) == want
    finally:
        await reader.close()


def _plan(db: Path, sql: str, params: list[object]) -> list[str]:
    with closing(sqlite3.connect(db)) as con:
        return [str(r[3]) for r in con.execute("EXPLAIN QUERY PLAN " + sql, params)]


@pytest.mark.parametrize(
    "sort", [*SORTS, column_sort("next", False)], ids=lambda s: f"{s.column}-{s.descending}"
)
@pytest.mark.parametrize("direction", ["from", "after", "before"])
@pytest.mark.parametrize("sizes", [{}, {"consumed": 10**6}], ids=["small", "big"])
async def test_a_page_seeks_the_anchors_ties_by_rowid(
    tied: Path, sort: object, direction: str, sizes: dict[str, int]
) -> None:
    """Never a row value ending with the id: SQLite would seek by its time
    alone and walk every row of that time before the anchor."""
    view = View(sort=sort)  # type: ignore[arg-type]
    sql, params = page_sql(view, NOW, [], sizes, (NOW, KEYS[3]), direction, 10)  # type: ignore[arg-type]
    plan = [s for s in _plan(tied, sql, params) if s.startswith(("SEARCH jobs", "SCAN jobs"))]
    seeks = [s for s in plan if "USING INDEX jobs_" in s]
    assert seeks and not [s for s in plan if s.startswith("SCAN")], plan
    ties = [s for s in seeks if "=? AND rowid" in s]
    assert ties and all(("rowid" in s) == ("=? AND rowid" in s) for s in seeks), plan


async def test_a_page_after_a_deleted_anchor_skips_nothing(tied: Path) -> None:
    view = View(sort=SORTS[0])
    reader = await ConsoleReader.open(tied, clock=ManualClock(NOW))
    try:
        await reader.counts()
        first = await reader.page(view, None, "from", 5)
        assert [r.idem for r in first.rows] == KEYS[:5]
        anchor = view.key_of(first.rows[-1])
        with closing(sqlite3.connect(tied)) as con, con:
            con.execute("DELETE FROM events WHERE idem = ?", (KEYS[4],))
            con.execute("DELETE FROM jobs WHERE idem = ?", (KEYS[4],))
        after = await reader.page(view, anchor, "after", 30)
        # From the first row of the anchor's time: shown again, none missed.
        assert [r.idem for r in after.rows] == [k for k in KEYS if k != KEYS[4]]
        before = await reader.page(view, anchor, "before", 30)
        assert [r.idem for r in before.rows] == [k for k in KEYS if k != KEYS[4]]
    finally:
        await reader.close()


async def test_prune_takes_the_oldest_rows_of_one_time_in_id_order(
    tied: Path, tmp_path: Path
) -> None:
    with closing(sqlite3.connect(tied)) as con, con:
        con.execute("UPDATE jobs SET status = 'consumed', state_since = ?", (NOW - 40 * DAY,))
    ledger = await open_ledger(tied, clock=ManualClock(NOW))
    archive = tmp_path / "archive.jsonl"
    try:
        await prune(
            ledger,
            statuses=["consumed"],
            older_than_s=30 * DAY,
            now=NOW,
            archive=archive,
            batch=5,
        )
    finally:
        await ledger.close()
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert [line["idem"] for line in lines] == KEYS
