"""What a new window of the ledger table does on the UI thread, counted (no
test here times anything): the columns are fitted to the window a column at
a time, not with Python's steps for each of its cells."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from reclaim_tui.tui.widgets import line_rows
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .test_table_render import NOW, TableApp, rows

LINE_ROWS = Path(line_rows.__file__).name


@contextmanager
def lines_run(file_name: str) -> Iterator[list[int]]:
    """The count of lines run in `file_name`'s functions while the block runs
    (a trace hook: a statement counter, never a clock)."""
    count = [0]

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            count[0] += 1
        return local

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and Path(frame.f_code.co_filename).name == file_name:
            return local
        return None

    sys.settrace(call)
    try:
        yield count
    finally:
        sys.settrace(None)


async def test_a_window_is_fitted_to_its_columns_without_steps_a_cell() -> None:
    """Fitting 100 rows of 10 cells took about 4 lines of Python a cell
    (its identity looked up, its width compared); now a column at a time."""
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(100, "a"), NOW, set())
        await pilot.pause()
        shown = rows(100, "b")
        with lines_run(LINE_ROWS) as run:
            table.show_rows(shown, NOW + 1, set())
        cells = len(shown) * len(table.columns)
        assert run[0] < cells, f"{run[0]} lines of {LINE_ROWS} run for {cells} cells"
        # The widths are what measuring every cell gives.
        for key, column in table.columns.items():
            if column.auto_width:
                widest = max(
                    [line_rows.text_width(table.get_cell(r.idem, key).plain) for r in shown]
                    + [line_rows.text_width(column.label.plain)]
                )
                assert column.content_width == widest, key
