"""Sort by any column (issue 25, "what a daily operator still lacks"): shift+
letter or `:sort COLUMN [asc|desc]`, both directions, read from the database
a keyset window at a time on both engines; an unindexed sort over too many
rows is refused, not run."""

from __future__ import annotations

import pytest

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import (
    SORT_COLUMNS,
    UNINDEXED_SORT_CAP,
    View,
    column_sort,
    sort_refusal,
)
from reclaim_tui.core.models import Status
from reclaim_tui.tui.state import ConsoleState
from reclaim_tui.tui.widgets.command_line import parse_command, sort_arguments
from tests.helpers.pages import walk, walk_back

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until
from .test_queries import expected, reader

__all__ = ["reader"]


@pytest.mark.parametrize("descending", [False, True], ids=["asc", "desc"])
@pytest.mark.parametrize("column", list(SORT_COLUMNS))
@pytest.mark.parametrize("statuses", [None, frozenset({Status.FAILED})], ids=["all", "failed"])
async def test_every_column_pages_every_row_once_in_order(
    reader: ConsoleReader, column: str, descending: bool, statuses: frozenset[Status] | None
) -> None:
    view = View(statuses=statuses, sort=column_sort(column, descending))
    all_rows = [r async for r in reader._fast.iter_rows()]
    want = expected(all_rows, view)
    assert await walk(reader, view, 17) == want
    assert await walk_back(reader, view, 17) == want


def test_an_unindexed_sort_over_too_many_rows_is_refused() -> None:
    by_model = View(sort=column_sort("model", False))
    big = {"failed": UNINDEXED_SORT_CAP + 1, "done": 5}
    refusal = sort_refusal(by_model, big)
    assert refusal is not None and "no index" in refusal
    assert sort_refusal(View(frozenset({Status.DONE}), sort=by_model.sort), big) is None
    assert sort_refusal(View(sort=column_sort("updated", True)), big) is None
    state = ConsoleState(counts=big)
    with pytest.raises(ValueError, match="pick a tab"):
        state.sort_by("model")
    state.tab = "done"
    assert state.sort_by("model").column == "model"
    state.tab = "all"  # the sort stays chosen, but the big tab keeps `t`'s
    assert state.view().sort.column == "state_since"


def test_sort_command_arguments() -> None:
    assert parse_command(":sort attempts desc").argument == "attempts desc"
    assert sort_arguments("key") == ("idem", None)
    assert sort_arguments("error asc") == ("error", False)
    for bad in ("", "colour", "model sideways", "a b c"):
        with pytest.raises(ValueError, match=":sort"):
            sort_arguments(bad)


async def test_shift_letters_and_sort_command_sort_the_table(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        def models() -> list[tuple[str, str]]:
            return [(r.model, r.idem) for r in app.table.rows_shown]

        await press(pilot, "M")
        assert await until(pilot, lambda: models() == sorted(models()) and len(models()) == 8)
        assert "model ascending" in app.main.bar.sort
        await press(pilot, "M")
        assert await until(pilot, lambda: models() == sorted(models(), reverse=True))
        assert "model descending" in app.main.bar.sort
        await press(pilot, "colon", *"sort key asc", "enter")
        keys = sorted(seeded.keys.values())
        assert await until(pilot, lambda: [r.idem for r in app.table.rows_shown] == keys)
        await press(pilot, "t")  # back to the cycled sorts
        assert await until(pilot, lambda: app.state.column_sort is None)
        assert "age in state" in app.main.bar.sort
