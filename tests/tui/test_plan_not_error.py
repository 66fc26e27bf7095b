"""A research plan is not an error (issue 32, item 13): the table showed it in
the "last error" column and the detail as `last error plan ready: …`."""

from __future__ import annotations

from rich.style import Style

from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.core.models import Status
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.tui.widgets.detail_pane import render_detail
from reclaim_tui.tui.widgets.table_cells import COLUMNS, row_cells

from .test_plan_and_404_rows import PLAN, _held

STYLES = {status: Style() for status in Status}
COLUMN = {key: i for i, (key, _) in enumerate(COLUMNS)}


def test_the_table_says_plan_ready_in_the_status_and_no_error() -> None:
    cells = row_cells(_held(f"{PLAN_READY}{PLAN}"), 3.0, set(), set(), STYLES, 40)
    assert cells[COLUMN["error"]].plain == ""
    assert cells[COLUMN["status"]].plain == "plan ready"


def test_an_error_still_shows_in_the_error_column() -> None:
    cells = row_cells(_held("NotCreatedError[429]: slow down"), 3.0, set(), set(), STYLES, 40)
    assert cells[COLUMN["error"]].plain.startswith("NotCreatedError[429]")
    assert cells[COLUMN["status"]].plain == "submitted"


def test_the_detail_says_plan_not_last_error() -> None:
    text = render_detail(Detail(_held(f"{PLAN_READY}{PLAN}"), None, [], None, None), 3.0).plain
    assert "last error" not in text
    assert "plan ready (held for you, below)" in text
    assert "1. Search for an overview of TPUs." in text  # the plan itself, as before
