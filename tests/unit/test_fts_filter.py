"""The console's text filter over the trigram index (issue 14).

The index only narrows: whichever way a filter is read (the rows the index
names read by id, or the sort's index walked testing each row's text; rows
indexed or still queued for the index), it returns exactly the rows the LIKE
test accepts, in the same keyset order.
The triggers keep the index in step with jobs; migration 5 backfills it.

The filter's results (the rows, their order, both ways) are the ledger's
contract: they are also checked on PostgreSQL, where the filter is ILIKE over
pg_trgm indexes the server plans itself (no ids, no queue: one way to read a
filter). The index's internals (queues, triggers, FTS5 plans, migration 5)
are SQLite's only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.cost_totals import CostFilter, cost_totals
from reclaim_tui.core.costs import load_prices
from reclaim_tui.core.ledger.console import queries, text_search
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.text_search import text_hits, trigrams
from reclaim_tui.core.ledger.console.views import SORTS, RowFilter, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    SEARCH_BATCH,
    SEARCH_FLUSH_SQL,
)
from reclaim_tui.core.models import JobSpec, Status
from tests.helpers.pages import display_key, walk, walk_back

NOW = 1_800_000_000.0

# (key, handle, input, model, status): keys, handles and inputs chosen for
# the cases a substring filter gets wrong most easily.
ROWS: list[tuple[str, str | None, Any, str, Status]] = [
    ("3f9a0c2e7b", "int-alpha-0001", "Summarise the café menu", "pro", Status.DONE),
    ("aa11bb22cc", "int-beta-0002", "CAFÉ in capitals, Crème brûlée", "flash", Status.FAILED),
    ("report-2024", None, "日本語のテキストを要約して", "pro", Status.RESERVING),
    ("quote_row", "int-gamma-0003", 'she said "hi" and it\'s fine', "pro", Status.CONSUMED),
    ("pct-row", "int-delta-0004", "100% sure, not 100 percent", "flash", Status.SUBMITTED),
    ("under_score", "int-eps-0005", "snake_case_name and snakeXcaseYname", "pro", Status.DONE),
    ("slash-row", "int-zeta-0006", "a back\\slash and a\nnewline", "pro", Status.CANCELLED),
    ("naive-row", "int-eta-0007", "naïve NAÏVE naive", "flash", Status.CONSUMED),
    ("syntax-row", "int-theta-0008", 'NEAR(a b) AND "x" OR y* ^start col:val', "pro", Status.DONE),
    ("parts-row", "int-iota-0009", [{"type": "text", "text": "a structured needle"}], "pro",
     Status.DONE),
    ("SummaRise-KEY", "int-kappa-0010", "nothing here", "flash", Status.FAILED),
    *[
        (f"bulk-{n:03d}", f"int-bulk-{n:03d}" if n % 4 else None, f"bulk prompt {n} needle",
         "pro" if n % 3 else "flash", list(Status)[n % len(Status)])
        for n in range(60)
    ],
]  # fmt: skip

QUERIES = [
    # keys and handles, whole and in part, in either case (ASCII folds)
    "3f9a0c2e7b", "0c2e", "0C2E", "int-beta", "INT-GAMMA-0003", "report-2024", "bulk-05",
    "alpha-000", "summarise",
    # input text, multi-byte, and non-ASCII case (LIKE does not fold it)
    "café", "CAFÉ", "Café", "crème", "日本語", "テキスト", "naïve", "NAÏVE", "ïve",
    # quotes, LIKE wildcards, FTS5 syntax: all literal
    '"hi"', 'said "hi', "it's", "100%", "% sure", "snake_case", "e_c", "back\\slash",
    "NEAR(a", 'AND "x"', "y* ^", "col:val", "structured needle", '"type"',
    # short (no trigram: the scan), common (over the cap: the walk), absent
    "a", "é", "%", "_", '"', "sn", "needle", "bulk prompt 1", "no such text anywhere",
]  # fmt: skip


def _ascii_lower(text: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in text)


def _matches(text: str, idem: str, handle: str | None, value: Any) -> bool:
    """The filter's rule in Python: an ASCII-case-insensitive substring of the
    key, the handle or the input (a structured input: its JSON text)."""
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    fields = [idem, handle or "", value]
    return any(_ascii_lower(text) in _ascii_lower(f) for f in fields)


def _spec(value: Any, model: str) -> str:
    return JobSpec(input=value, model=model).to_json()


async def _seed(db: str) -> ConsoleReader:
    """ROWS in a new ledger at `db` (a file or a PostgreSQL URL), and a reader of it."""
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    try:
        await ledger.insert_jobs([(k, _spec(v, m), m) for k, _, v, m, _ in ROWS], "test")
        async with ledger.write() as con:
            for n, (key, handle, _, _, status) in enumerate(ROWS):
                since = NOW - (n % 5) * 60  # ties: the key breaks them
                await con.execute(
                    Sql(
                        lambda d: (
                            f"UPDATE jobs SET handle = {d.p}, status = {d.p}, state_since ="
                            f" {d.p}, updated_at = {d.p}"
                            f" WHERE idem = {d.p}"
                        )
                    ),
                    (handle, status.value, since, since + n % 3, key),
                )
    finally:
        await ledger.close()
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    await reader.counts()
    return reader


@pytest.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[tuple[Path, ConsoleReader]]:
    """The seeded SQLite ledger (the tests of its index's internals)."""
    db = tmp_path / "fts.db"
    reader = await _seed(str(db))
    yield db, reader
    await reader.close()


# Not `db_url`: SQLite is read two ways (rows queued for the index or moved
# in), PostgreSQL one (its indexes are never behind): three cases, not four.
@pytest.fixture(params=["queued", "indexed", pytest.param("postgres", marks=pytest.mark.postgres)])
async def reader(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ConsoleReader]:
    """The seeded ledger: on SQLite with its rows still queued for the index,
    or moved in; or on PostgreSQL."""
    if request.param == "postgres":
        db = str(request.getfixturevalue("pg_dsn"))
    else:
        db = str(tmp_path / "fts.db")
    reader = await _seed(db)
    try:
        if request.param == "indexed":
            with _connect(Path(db)) as con:
                con.executescript(SEARCH_FLUSH_SQL)
                assert _queued(con) == (0, 0)
        yield reader
    finally:
        await reader.close()


def _connect(db: Path) -> closing[sqlite3.Connection]:
    return closing(sqlite3.connect(db, isolation_level=None))


def _queued(con: sqlite3.Connection) -> tuple[int, int]:
    """Rows waiting for the key/input index and for the handle index."""
    text = con.execute("SELECT COUNT(*) FROM jobs_fts_pending").fetchone()[0]
    return text, con.execute("SELECT COUNT(*) FROM handles_fts_pending").fetchone()[0]


async def _like_scan(reader: ConsoleReader, text: str) -> set[str]:
    """The rows plain LIKE accepts: key, handle or input, no index involved
    (on PostgreSQL the LIKE is sent as ILIKE, as every ledger LIKE is)."""
    pattern = text_search.like_pattern(text)
    postgres = reader._fast.dialect == "postgres"
    spec_input = "(spec::json ->> 'input')" if postgres else "json_extract(spec, '$.input')"
    like, mark = ("ILIKE", "%s") if postgres else ("LIKE", "?")
    rows = await reader._fast.select(
        f"SELECT idem FROM jobs WHERE idem {like} {mark} ESCAPE '\\'"
        f" OR handle {like} {mark} ESCAPE '\\' OR {spec_input} {like} {mark} ESCAPE '\\'",
        [pattern] * 3,
    )
    return {r[0] for r in rows}


PLANS = ("by id", "too many hits: the walk", "too short: the walk")


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Switch the reader between its ways of answering a text filter, by the
    limits it picks them by (a text with no hit at all is always read by id)."""

    def use(plan: str) -> None:
        monkeypatch.setattr(text_search, "FTS_MIN", 10**6 if plan.startswith("too short") else 3)
        monkeypatch.setattr(text_search, "FTS_BY_ID", 10**6 if plan == "by id" else 0)

    return use


# -- the index returns what LIKE returns -----------------------------------------------
@pytest.mark.parametrize("text", QUERIES)
async def test_every_plan_returns_the_like_rows(
    reader: ConsoleReader, plans: Callable[[str], None], text: str
) -> None:
    want = {k for k, h, v, _, _ in ROWS if _matches(text, k, h, v)}
    assert await _like_scan(reader, text) == want
    for plan in PLANS:
        plans(plan)
        got = await walk(reader, View(filter=RowFilter(text=text)), 7)
        assert set(got) == want and len(got) == len(want), plan


async def test_non_ascii_case_is_not_folded(reader: ConsoleReader) -> None:
    # The trigram index folds É to é; the LIKE re-check keeps the old rule.
    got = await walk(reader, View(filter=RowFilter(text="CAFÉ")), 10)
    assert got == ["aa11bb22cc"]


@pytest.mark.parametrize("plan", PLANS[:2])
@pytest.mark.parametrize("sort", SORTS, ids=lambda s: f"{s.column}-{s.descending}")
@pytest.mark.parametrize("query", ["needle", "bulk-0", "needle status:done", "int- model:flash"])
async def test_filtered_windows_walk_in_order_both_ways(
    reader: ConsoleReader, plans: Callable[[str], None], plan: str, sort: Any, query: str
) -> None:
    plans(plan)
    view = View(filter=RowFilter.parse(query), sort=sort)
    flt = view.filter
    rows = [r async for r in reader._fast.iter_rows()]
    spec_input = {r.idem: json.loads(r.spec)["input"] for r in rows}
    chosen = [
        r
        for r in rows
        if _matches(flt.text, r.idem, r.handle, spec_input[r.idem])
        and (not flt.statuses or r.status in flt.statuses)
        and all(m.lower() in r.model.lower() for m in flt.models)
    ]
    chosen.sort(key=await display_key(reader, view), reverse=sort.descending)
    want = [r.idem for r in chosen]
    assert want
    for size in (2, 9):
        assert await walk(reader, view, size) == want
        assert await walk_back(reader, view, size) == want


async def test_filter_inside_a_status_tab(reader: ConsoleReader) -> None:
    view = View(statuses=frozenset({Status.FAILED}), filter=RowFilter(text="int-"))
    assert set(await walk(reader, view, 3)) == {
        k for k, h, _, _, s in ROWS if s == Status.FAILED and h and "int-" in h
    }


async def test_export_and_mark_all_see_the_same_rows(reader: ConsoleReader) -> None:
    view = View(filter=RowFilter(text="needle"))
    idems, capped = await reader.matching_idems(view, cap=1000)
    assert not capped and idems == await walk(reader, view, 100)


@pytest.mark.parametrize(
    "view",
    [
        View(filter=RowFilter(text="needle")),
        View(statuses=frozenset({Status.RESERVING}), filter=RowFilter(text="needle")),
        View(filter=RowFilter(text="no such text anywhere")),
        View(filter=RowFilter(models=("m",))),
    ],
)
async def test_costs_of_a_view_count_the_rows_it_shows(reader: ConsoleReader, view: View) -> None:
    """The console's `$` under a filter totals the rows the table shows (the
    view's ids as a subquery of the costs' SQL), on both engines."""
    sql, params = await reader.view_ids_sql(view)
    totals = await cost_totals(
        reader.background,
        load_prices(None, environ={}),
        where=CostFilter(rows=(sql, tuple(params))),
    )
    assert sum(row.rows for row in totals) == len(await walk(reader, view, 100))


@pytest.mark.parametrize("text", ["bulk\x00prompt", "needle\x00", "\x00\x00\x00", "nul \x00 here"])
async def test_a_filter_with_a_nul_character_is_read_not_refused(
    reader: ConsoleReader, plans: Callable[[str], None], text: str
) -> None:
    # A NUL pasted into the filter line: FTS5 cannot hold it in a MATCH
    # string ("unterminated string": the console said "ledger read failed"
    # and showed nothing); the filter answers what LIKE answers.
    want = await _like_scan(reader, text)
    for plan in PLANS:
        plans(plan)
        assert set(await walk(reader, View(filter=RowFilter(text=text)), 7)) == want, plan


def test_trigrams_are_quoted_fts5_strings() -> None:
    assert trigrams("ab") == []
    assert trigrams("abc") == ['"abc"']
    assert trigrams('a "b"') == ['"a """', '" ""b"', '"""b"""']
    assert trigrams("aaaaaa") == ['"aaa"']  # each once
    text = "".join(chr(0x4E00 + n) for n in range(500))
    spread = trigrams(text)
    assert len(spread) <= text_search._CONSIDERED + 1
    assert spread[0] == f'"{text[:3]}"' and spread[-1] == f'"{text[-3:]}"'


# SQLite only, from here to the triggers' section: which FTS5 trigrams are looked
# up and when there are too many ids (text_hits); PostgreSQL hands no ids.
async def _indexed_hits(db: Path, reader: ConsoleReader, text: str) -> list[int] | None:
    with _connect(db) as con:
        con.executescript(SEARCH_FLUSH_SQL)  # the indexes, not the queues, name them
    hits = await text_hits(reader._fast, text)
    return None if hits is None else sorted(set(json.loads(hits)))


async def test_the_rarest_trigrams_are_looked_up(
    seeded: tuple[Path, ConsoleReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    # "bulk prompt 17 needle": every trigram but those around "17" is in all
    # 60 bulk rows; the one looked up must be one of those in a single row.
    db, reader = seeded
    monkeypatch.setattr(text_search, "_LOOKED_UP", 1)
    assert len(await _indexed_hits(db, reader, "bulk prompt 17 needle") or []) == 1
    # "pt 1 ne": its one rare trigram, " 1 ", straddles "pt " and "1 n".
    assert len(await _indexed_hits(db, reader, "pt 1 ne") or []) == 1
    view = View(filter=RowFilter(text="pt 1 ne"))
    assert await walk(reader, view, 5) == ["bulk-001"]


async def test_too_many_hits_for_the_ledger_size_walk_instead(
    seeded: tuple[Path, ConsoleReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, reader = seeded
    assert len(await _indexed_hits(db, reader, "needle") or []) == 61
    monkeypatch.setattr(text_search, "FTS_BY_ID", 1)  # 1·√71 rows: 8 hits at most
    assert await _indexed_hits(db, reader, "needle") is None
    assert await _indexed_hits(db, reader, "bulk prompt 17 needle") is not None


# -- the triggers keep the index in step --------------------------------------------------
# SQLite only (but the malformed spec): FTS5's tables, queues and triggers;
# PostgreSQL's GIN indexes are kept in step by the server itself.
def _integrity(con: sqlite3.Connection) -> None:
    """FTS5's own check that the indexes hold exactly what jobs_fts_source says."""
    con.executescript(SEARCH_FLUSH_SQL)
    for index in ("jobs_fts", "handles_fts"):
        con.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")


def _indexed(con: sqlite3.Connection, text: str) -> set[str]:
    """Keys of the rows the indexes (not the queues) name for `text`."""
    rows = con.execute(
        "SELECT idem FROM jobs WHERE id IN (SELECT rowid FROM jobs_fts WHERE jobs_fts MATCH ?1"
        " UNION SELECT rowid FROM handles_fts WHERE handles_fts MATCH ?1)",
        (" AND ".join(trigrams(text)),),
    )
    return {r[0] for r in rows}


def _index_pages(con: sqlite3.Connection, index: str) -> tuple[Any, ...]:
    return tuple(con.execute(f"SELECT COUNT(*), SUM(LENGTH(block)) FROM {index}_data").fetchone())


async def _found(db: Path | str, text: str) -> list[str]:
    reader = await ConsoleReader.open(db, clock=ManualClock(NOW))
    try:
        return await walk(reader, View(filter=RowFilter(text=text)), 50)
    finally:
        await reader.close()


async def test_insert_handle_update_and_delete_stay_in_step(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    await ledger.insert_jobs([("job-one", _spec("first prompt", "m"), "m")], "test")
    await ledger.close()
    with _connect(db) as con:
        _integrity(con)
        assert _indexed(con, "first prompt") == {"job-one"}
        con.execute("UPDATE jobs SET handle = 'int-old-handle' WHERE idem = 'job-one'")
        _integrity(con)
        con.execute("UPDATE jobs SET handle = 'int-new-handle' WHERE idem = 'job-one'")
    # Queued (not yet in the index): the reader still sees the change.
    assert await _found(db, "int-new") == ["job-one"]
    assert await _found(db, "int-old") == []
    with _connect(db) as con:
        _integrity(con)
        assert _indexed(con, "int-new") == {"job-one"} and _indexed(con, "int-old") == set()
        con.execute(
            Sql(lambda d: f"UPDATE jobs SET spec = {d.p} WHERE idem = 'job-one'"),
            (_spec("second prompt", "m"),),
        )
        _integrity(con)
        assert _indexed(con, "second") == {"job-one"} and _indexed(con, "first") == set()
        con.execute("DELETE FROM jobs WHERE idem = 'job-one'")
    assert await _found(db, "second") == []
    with _connect(db) as con:
        _integrity(con)
        assert _indexed(con, "second") == set()


async def test_insert_then_delete_before_the_index_sees_it(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    await (await open_ledger(db)).close()
    with _connect(db) as con:
        con.execute(
            Sql(
                lambda d: (
                    "INSERT INTO jobs(idem, spec, model, status, handle, created_at, state_since,"
                    f" updated_at) VALUES ('brief', {d.p}, 'm', 'reserving', 'h-1', 0, 0, 0)"
                )
            ),
            (_spec("short lived", "m"),),
        )
        con.execute("UPDATE jobs SET handle = 'h-2' WHERE idem = 'brief'")
        con.execute("DELETE FROM jobs WHERE idem = 'brief'")
        _integrity(con)
        assert _indexed(con, "short lived") == set()


async def test_the_hot_path_never_touches_the_index(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    await ledger.insert_jobs([("job-one", _spec("prompt", "m"), "m")], "test")
    await ledger.close()
    with _connect(db) as con:
        con.executescript(SEARCH_FLUSH_SQL)
        text_index = _index_pages(con, "jobs_fts")
        # Setting the handle queues the row for the handle index only.
        con.execute("UPDATE jobs SET handle = 'int-1' WHERE idem = 'job-one'")
        assert _queued(con) == (0, 1)
        con.executescript(SEARCH_FLUSH_SQL)
        assert _index_pages(con, "jobs_fts") == text_index
        before = _index_pages(con, "handles_fts")
        con.execute(
            "UPDATE jobs SET status = 'done', lease_owner = 'x', lease_until = 9, next_at = 5,"
            " polls = polls + 1, updated_at = 7 WHERE idem = 'job-one'"
        )
        # Named in the SET list but unchanged: the WHEN clauses skip it.
        con.execute("UPDATE jobs SET handle = handle, spec = spec WHERE idem = 'job-one'")
        assert _queued(con) == (0, 0)
        assert (_index_pages(con, "jobs_fts"), _index_pages(con, "handles_fts")) == (
            text_index,
            before,
        )


async def test_a_full_queue_moves_into_the_index_by_itself(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    jobs = [(f"k{n:05d}", _spec(f"prompt {n}", "m"), "m") for n in range(SEARCH_BATCH + 5)]
    await ledger.insert_jobs(jobs, "test")
    await ledger.close()
    with _connect(db) as con:
        # The transaction that queued SEARCH_BATCH rows moved them all.
        assert _queued(con) == (0, 0)
        # (the index names candidates: every key holding its trigrams)
        assert "k00000" in _indexed(con, "k00000") and "k01004" in _indexed(con, "k01004")
        # A writer outside the ledger's code leaves them queued; readers see them.
        con.execute("UPDATE jobs SET handle = 'int-' || idem")
        assert _queued(con) == (0, SEARCH_BATCH + 5)
    assert await _found(db, "int-k01004") == ["k01004"]
    with _connect(db) as con:
        _integrity(con)
        assert "k00999" in _indexed(con, "int-k00999")


async def test_a_malformed_spec_does_not_break_writes(db_url: str) -> None:
    # Both engines: SQLite's triggers and PostgreSQL's index over
    # reclaim_input(spec) both read the input of every row written.
    ledger = await open_ledger(db_url)
    try:
        async with ledger.write() as con:
            await con.execute(
                "INSERT INTO jobs(idem, spec, model, status, created_at, state_since, updated_at)"
                " VALUES ('hand-edited', 'not json', 'm', 'reserving', 0, 0, 0)"
            )
            await con.execute(
                "UPDATE jobs SET handle = 'h-x', spec = '{' WHERE idem = 'hand-edited'"
            )
    finally:
        await ledger.close()
    if ledger.dialect == "sqlite":
        with _connect(Path(db_url)) as con:
            _integrity(con)
    assert await _found(db_url, "hand-edited") == ["hand-edited"]


# -- migration 5 backfills an existing ledger ----------------------------------------------
# SQLite only: migration 5 is SQLite's (PostgreSQL's schema began with its indexes).
async def test_migration_backfills_a_version_4_ledger(tmp_path: Path) -> None:
    db = tmp_path / "v4.db"
    con = sqlite3.connect(db)
    for migration in MIGRATIONS[:4]:
        con.executescript(migration)
    con.executemany(
        Sql(
            lambda d: (
                "INSERT INTO jobs(idem, spec, model, status, handle, created_at, state_since,"
                f" updated_at) VALUES ({d.p}, {d.p}, {d.p}, {d.p}, {d.p}, 0, 0, 0)"
            )
        ),
        [(k, _spec(v, m), m, s.value, h) for k, h, v, m, s in ROWS],
    )
    con.execute("PRAGMA user_version = 4")
    con.commit()
    con.close()
    await (await open_ledger(db)).close()
    with _connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 5
        assert _queued(con) == (0, 0)
        assert _indexed(con, "int-gamma") == {"quote_row"}
        assert _indexed(con, "日本語") == {"report-2024"}
        _integrity(con)
    assert sorted(await _found(db, "bulk-05")) == [f"bulk-05{n}" for n in range(10)]


# -- the plan: the index, not a scan of jobs ------------------------------------------------
# SQLite only: its EXPLAIN QUERY PLAN and trace callback.
def _plan(con: sqlite3.Connection, sql: str, params: list[Any]) -> list[str]:
    return [r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql, params)]


def _scans_jobs(plan: list[str]) -> bool:
    return any(step == "SCAN jobs" or step.startswith("SCAN jobs ") for step in plan)


@pytest.mark.parametrize("sort", SORTS, ids=lambda s: f"{s.column}-{s.descending}")
@pytest.mark.parametrize("query", ["bulk prompt 4", "int-beta status:failed"])
async def test_a_filtered_page_reads_the_index_not_every_row(
    seeded: tuple[Path, ConsoleReader], sort: Any, query: str
) -> None:
    db, reader = seeded
    with _connect(db) as con:
        con.executescript(SEARCH_FLUSH_SQL)  # the index, not the queue, names them
    view = View(filter=RowFilter.parse(query), sort=sort)
    statements: list[str] = []
    await reader._fast.connection.set_trace_callback(statements.append)
    page = await reader.page(view, None, "from", 5)
    ran = list(statements)
    assert page.rows
    assert any("jobs_fts MATCH" in s for s in ran)
    [page_sql] = [s for s in ran if s.startswith("SELECT idem,")]
    assert "NOT INDEXED" in page_sql
    hits = await text_hits(reader._fast, view.filter.text)
    assert hits is not None and 0 < len(set(json.loads(hits))) <= 11
    sql, params = queries._page_sql(view, NOW, [], reader.sizes, None, "from", 6, hits)
    with _connect(db) as con:
        match = " AND ".join(trigrams(view.filter.text))
        found = _plan(con, text_search._HITS_SQL, [match, match, 10])
        assert any(step.startswith("SCAN jobs_fts VIRTUAL TABLE") for step in found)
        page_plan = _plan(con, sql, params)
    assert "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)" in page_plan
    assert not _scans_jobs(page_plan), page_plan


async def test_a_short_filter_keeps_the_ordered_walk(seeded: tuple[Path, ConsoleReader]) -> None:
    db, reader = seeded
    view = View(filter=RowFilter(text="é"), sort=SORTS[2])
    assert await text_hits(reader._fast, view.filter.text) is None
    sql, params = queries._page_sql(view, NOW, [], reader.sizes, None, "from", 6)
    with _connect(db) as con:
        plan = _plan(con, sql, params)
    assert not any("jobs_fts" in step for step in plan)
    assert any("jobs_updated" in step for step in plan), plan
