"""What a new window of the ledger table costs the UI thread, counted (no
test here times anything): no cell of printable ASCII is measured by Rich's
`cell_len` (a Python call and a cache look-up each), neither when the
columns are fitted to the window nor when its lines are drawn: its length
is its width."""

from __future__ import annotations

from dataclasses import replace

import pytest
import rich.cells
from textual.geometry import Region

from reclaim_tui.core.models import Row
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .test_table_render import NOW, TableApp, rows
from .test_window_formatting import _counting


def _ascii_rows(count: int, prefix: str) -> list[Row]:
    """Rows whose every cell is printable ASCII (keys short enough to show whole)."""
    return [
        replace(row, idem=f"{prefix}{n:04d}", model="gemini-3-flash", handle=f"v1_{n:06d}")
        for n, row in enumerate(rows(count, prefix))
    ]


async def test_no_printable_ascii_cell_is_measured_by_rich(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each window's cells were measured by `cell_len` to fit the columns,
    and each line's cells twice more and its segments once more to draw it."""
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(_ascii_rows(100, "a"), NOW, set())
        await pilot.pause()
        measured = _counting(monkeypatch, rich.cells, "cached_cell_len")
        table.show_rows(_ascii_rows(100, "b"), NOW + 1, set())
        lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        ascii_measured = [t for t in measured if t.isascii() and t.isprintable()]
        assert ascii_measured == []
        assert "b0001" in "".join(segment.text for segment in lines[2])
