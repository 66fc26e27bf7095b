"""A key that moves the cursor to another window (a tab, the first or the
last window, paging past an edge) reads the window and the detail of the
row its cursor lands on in ONE call to SQLite's connection thread: the
landing row depends on the window's answer, and the function choosing it
runs in that thread (issue 39, item 5: each call costs the console's event
loop a hand-off and a wake-up on the key's path). The page is the same as
without it, the landing detail the same as `detail` reads, on both engines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import View
from reclaim_tui.core.models import Status
from tests.helpers.thread_calls import count_thread_calls

from .test_detail_one_read import FOLLOW_UP, _world


def _count_calls(reader: ConsoleReader, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The calls handed to the interactive connection's thread, by function."""
    return count_thread_calls(reader._fast.connection, monkeypatch)


@pytest.mark.parametrize(
    ("direction", "landing", "index"),
    [
        ("from", 0, 0),
        ("from", 1, 1),
        ("from", -1, 1),
        ("from", 7, 1),
        ("last", -1, 1),
        ("last", 0, 0),
    ],
)
async def test_a_window_and_its_landing_rows_detail_are_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direction: str, landing: int, index: int
) -> None:
    db = str(tmp_path / "ledger.db")
    clock = await _world(tmp_path, db)
    reader = await ConsoleReader.open(db, clock=clock)
    try:
        view = View()
        plain = await reader.page(view, None, direction)  # type: ignore[arg-type]
        assert len(plain.rows) == 2 and plain.landing is None
        calls = _count_calls(reader, monkeypatch)
        page = await reader.page(view, None, direction, landing=landing)  # type: ignore[arg-type]
        idem = plain.rows[index].idem
        # The row a follow-up follows up is read after, as `detail` does.
        assert sum(calls.values()) == (2 if idem == idempotency_key(FOLLOW_UP) else 1), calls
        assert page == plain
        assert page.landing is not None
        assert page.landing == (idem, await reader.detail(idem))
    finally:
        await reader.close()


async def test_a_window_with_a_landing_row_is_the_same_on_both_engines(
    tmp_path: Path, db_url: str
) -> None:
    clock = await _world(tmp_path, db_url)
    reader = await ConsoleReader.open(db_url, clock=clock)
    try:
        view = View()
        plain = await reader.page(view)
        for landing in (0, -1):
            page = await reader.page(view, landing=landing)
            assert page == plain
            idem = plain.rows[landing].idem
            assert page.landing == (idem, await reader.detail(idem))
        empty = await reader.page(View(statuses=frozenset({Status.FAILED})), landing=0)
        assert empty.rows == [] and empty.landing is None
    finally:
        await reader.close()


async def test_failing_second_reads_give_none_and_the_first_reads_answers(
    tmp_path: Path, db_url: str
) -> None:
    clock = await _world(tmp_path, db_url)
    reader = await ConsoleReader.open(db_url, clock=clock)
    try:
        seen: list[list[list[Any]]] = []

        def then(answers: list[list[Any]]) -> list[tuple[str, list[Any]]]:
            seen.append(answers)
            return [("SELECT 2", []), ("SELECT nothing FROM no_such_table", [])]

        first, second = await reader._fast.select_then([("SELECT 1", [])], then)
        assert [list(r) for r in first[0]] == [[1]] and seen == [first]
        assert second is None
        # The connection still reads.
        assert [list(r) for r in await reader._fast.select("SELECT 3")] == [[3]]
    finally:
        await reader.close()
