"""core/ledger/console/queries.py: keyset windows walk every row exactly once, in every sort."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import SORTS, RowFilter, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Row, Status
from tests.helpers.pages import walk, walk_back

NOW = 1_800_000_000.0


@pytest.fixture
async def reader(db_url: str) -> AsyncIterator[ConsoleReader]:
    rng = random.Random(3)
    rows = []
    for n in range(230):
        status = rng.choice(list(Status))
        since = NOW - rng.choice([10, 20, 30, 40]) * 60  # many ties: idem breaks them
        rows.append(
            (
                f"{n:04d}{rng.getrandbits(32):08x}",
                json.dumps({"input": f"prompt {n} {'needle' if n % 7 == 0 else ''}", "model": "m"}),
                "pro" if n % 3 else "flash",
                status.value,
                1 if status == Status.RESERVING and n % 2 else 0,
                since,
                since + rng.choice([0, 5]),
                "HTTP 429" if n % 11 == 0 else None,
            )
        )
    ledger = await open_ledger(db_url)
    try:
        async with ledger.write() as con:
            await con.executemany(
                Sql(
                    lambda d: (
                        "INSERT INTO jobs(idem, spec, model, status, inflight, created_at,"
                        " state_since,"
                        " updated_at, last_error) VALUES"
                        f" ({d.p},{d.p},{d.p},{d.p},{d.p},{d.p},{d.p},{d.p},{d.p})"
                    )
                ),
                [(*r[:5], r[5], r[5], r[6], r[7]) for r in rows],
            )
    finally:
        await ledger.close()
    r = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    await r.counts()
    yield r
    await r.close()


def expected(all_rows: list[Row], view: View) -> list[str]:
    rows = [r for r in all_rows if view.statuses is None or r.status in view.statuses]
    rows.sort(key=view.key_of, reverse=view.sort.descending)
    return [r.idem for r in rows]


@pytest.mark.parametrize("sort", SORTS, ids=lambda s: f"{s.column}-{s.descending}")
@pytest.mark.parametrize("statuses", [None, frozenset({Status.FAILED}), frozenset(Status)])
async def test_pages_cover_every_row_once_in_order(
    reader: ConsoleReader, sort: object, statuses: frozenset[Status] | None
) -> None:
    view = View(statuses=statuses, sort=sort)  # type: ignore[arg-type]
    all_rows = [r async for r in reader._fast.iter_rows()]
    want = expected(all_rows, view)
    assert await walk(reader, view, 17) == want
    assert await walk_back(reader, view, 17) == want


async def test_refresh_from_the_window_start_keeps_its_place(reader: ConsoleReader) -> None:
    view = View()
    first = await reader.page(view, None, "from", 20)
    second = await reader.page(view, view.key_of(first.rows[-1]), "after", 20)
    again = await reader.page(view, view.key_of(second.rows[0]), "from", 20)
    assert again.rows == second.rows and again.has_before and again.has_after


async def test_filter_text_and_tokens(reader: ConsoleReader) -> None:
    all_rows = [r async for r in reader._fast.iter_rows()]
    view = View(filter=RowFilter.parse("needle model:flash error:429"))
    got = set(await walk(reader, view, 10))
    want = {
        r.idem
        for r in all_rows
        if "needle" in r.spec and "flash" in r.model and "429" in (r.last_error or "")
    }
    assert got == want and got


async def test_orphans_view_matches_count(reader: ConsoleReader) -> None:
    _, orphans = await reader.counts()
    got = await walk(reader, View(orphans=True), 7)
    assert len(got) == orphans > 0


def test_filter_parse_rejects_unknown_status() -> None:
    with pytest.raises(ValueError, match="unknown status"):
        RowFilter.parse("status:lost")
    parsed = RowFilter.parse("foo status:FAILED bar model:pro")
    assert parsed.text == "foo bar" and parsed.statuses == {Status.FAILED}
    assert parsed.models == ("pro",)


async def test_like_wildcards_are_literal(reader: ConsoleReader) -> None:
    assert await walk(reader, View(filter=RowFilter.parse("%")), 50) == []
