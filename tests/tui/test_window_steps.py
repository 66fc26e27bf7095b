"""What a new window of the ledger table does on the UI thread, counted (no
test here times anything): the old window's drawn lines are not all freed
inside the key that brings the new one (each is freed when its new line is
drawn), and the columns are fitted to the window a column at a time, not
with Python's steps for each of its cells."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from textual.geometry import Region

from reclaim_tui.tui.widgets import line_rows
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from tests.helpers.python_calls import python_calls

from .test_table_render import NOW, TableApp, rows
from .test_window_widths import _ascii_rows

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

    # The hook in place before (coverage's tracer, under CI) goes back after: left
    # at None, the rest of this process's tests would run unmeasured.
    before = sys.gettrace()
    sys.settrace(call)
    try:
        yield count
    finally:
        sys.settrace(before)


async def test_a_new_window_frees_no_drawn_line_in_the_key() -> None:
    """Textual's refresh of the whole widget empties its cache of drawn lines,
    and the old window's 48 lines (each with its caches and segments) were
    freed inside the key that brought the new window: the table refreshes
    its region instead, and each old line goes when its new one is drawn."""
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(_ascii_rows(100, "a"), NOW, set())
        await pilot.pause()
        await pilot.pause()
        with python_calls() as calls:
            table.show_rows(_ascii_rows(100, "b"), NOW + 1, set())
        assert calls[("_styles_cache.py", "clear")] == 0
        await pilot.pause()
        await pilot.pause()
        # Every line of the new window is drawn: none of the old one is left.
        lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        texts = ["".join(segment.text for segment in line) for line in lines]
        assert all("a0" not in text for text in texts)
        assert "b0001" in texts[2] and "b0045" in texts[46]
        assert app.export_screenshot().count("b00") == 47


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
