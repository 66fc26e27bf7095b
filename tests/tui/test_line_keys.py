"""A line of the ledger table is found, and drawn, without hashing a style:
the line is kept by its cells' identities (a cell's text is never changed in
place), a row's places are found once a line, and a cell drawn again where
it was drawn before is not built again. Hashing styles' values (a Python
call each) was about 60 calls a line drawn. Counted, never timed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from rich.style import Style
from textual.geometry import Region

from reclaim_tui.tui.widgets import line_paint, line_rows
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from tests.helpers.python_calls import python_calls

from .test_table_render import NOW, TableApp, rows

OURS = {Path(line_paint.__file__).name, Path(line_rows.__file__).name}


def _count_our_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Style]:
    """The styles hashed, from now on, by the table's own drawing code."""
    hashed: list[Style] = []
    real = Style.__hash__

    def counting(self: Style) -> int:
        if Path(sys._getframe(1).f_code.co_filename).name in OURS:
            hashed.append(self)
        return real(self)

    monkeypatch.setattr(Style, "__hash__", counting)
    return hashed


def _screen(table: LedgerTable) -> list[str]:
    lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return ["".join(segment.text for segment in line) for line in lines]


async def test_a_new_window_is_drawn_without_hashing_a_style(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(100, "a"), NOW, set())
        await pilot.pause()
        await pilot.pause()
        table.show_rows(rows(100, "b"), NOW + 1, set())
        hashed = _count_our_hashes(monkeypatch)
        with python_calls() as calls:
            screen = _screen(table)
        monkeypatch.undo()
        assert calls[("line_paint.py", "draw_line")] == table.size.height - 1  # not the header
        assert len(hashed) == 0, f"{len(hashed)} styles hashed for {table.size.height} lines"
        assert screen[1].split()[0].startswith("b000") and "v1_handle000001" in screen[2]
        assert not any(line.split()[0].startswith("a000") for line in screen[1:])


async def test_a_line_whose_ages_moved_builds_only_the_cells_that_changed() -> None:
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        shown = rows(100, "a")
        table.show_rows(shown, NOW, set())
        await pilot.pause()
        await pilot.pause()
        table.show_rows(shown, NOW + 3600, set())  # the same rows, an hour on
        with python_calls() as calls:
            screen = _screen(table)
        lines = calls[("line_paint.py", "draw_line")]
        built = calls[("line_paint.py", "_cell_segments")]
        assert lines == table.size.height - 1  # the rows, not the header
        # The age in state, the next poll and the age since updated, not ten cells.
        assert built <= 3 * lines, f"{built} cells built for {lines} lines"
        assert table.get_cell(shown[0].idem, "age").plain in screen[1]
