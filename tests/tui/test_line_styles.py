"""Drawing a line of the ledger table finds each cell's styles (its place's
and its text's, combined) by the styles' identities: hashing the three
styles' values, six times a cell, was most of the look-ups a line made.
Counted, never timed."""

from __future__ import annotations

import sys

import pytest
from rich.style import Style
from textual.geometry import Region

from reclaim_tui.tui.widgets import line_paint
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .test_table_render import NOW, TableApp, rows


def _count_hashes_in(monkeypatch: pytest.MonkeyPatch, function: object) -> list[Style]:
    """The styles hashed, from now on, by the look-ups of `function`'s own code."""
    code = function.__code__  # type: ignore[attr-defined]
    hashed: list[Style] = []
    real = Style.__hash__

    def counting(self: Style) -> int:
        if sys._getframe(1).f_code is code:
            hashed.append(self)
        return real(self)

    monkeypatch.setattr(Style, "__hash__", counting)
    return hashed


async def test_a_cell_s_styles_are_found_without_hashing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(100, "a"), NOW, set())
        await pilot.pause()
        table.show_rows(rows(100, "b"), NOW + 1, set())
        hashed = _count_hashes_in(monkeypatch, line_paint.Styles.text)
        lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        assert hashed == []
        assert "b" in "".join(segment.text for segment in lines[1])
