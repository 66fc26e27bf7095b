"""The ledger table draws its plain cells itself (issue 14: the console under load)
and must draw exactly what DataTable draws.

`LedgerTable._render_cell` builds the segments of a one-line plain cell without
Rich, and `_update_dimensions` takes such a cell's width as its length. Each is
compared here with DataTable's own method on the same table: cell by cell (every
column, cursor and hover on and off, dark and light theme), column widths, and
the whole screen as an SVG screenshot with the table's own drawing switched off.
Cells it must leave to DataTable (wide characters, control characters, spans, a
text longer than its column) are checked to go there.
"""

from __future__ import annotations

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui.widgets import ledger_table
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .conftest import Seeded
from .pilot_helpers import settle

NOW = 1_800_000_000.0
ERRORS = [
    None,
    "",
    "boom",
    "429 RESOURCE_EXHAUSTED: quota exceeded for gemini-3-pro " * 3,  # cut to the column
    "erreur: réponse tronquée…",  # one cell per character, not ASCII
    "模型超时",  # wide characters: DataTable's
    "tab\there",  # a control character: DataTable's
]
MODELS = ["gemini-3-flash", "gemini-3-pro-preview", "deep-research-pro-preview-12-2025", "模型"]


def rows(count: int = 24) -> list[Row]:
    out = []
    for i in range(count):
        out.append(
            Row(
                idem=f"{i:032x}",
                spec="{}",
                model=MODELS[i % len(MODELS)],
                status=list(Status)[i % len(Status)],
                handle=None if i % 5 == 0 else f"v1_handle{i:06d}",
                attempts=i % 4,
                polls=i,
                inflight=False,
                held=i % 7 == 0,
                duplicates=0,
                error_streak=0,
                prev_owner=None,
                lease_owner=None,
                lease_until=0.0,
                next_at=NOW + (i - 5) * 37.0,
                last_error=ERRORS[i % len(ERRORS)],
                created_at=NOW - 9000 - i,
                state_since=NOW - i * 613.0,
                submitted_at=None,
                done_at=None,
                consumed_at=None,
                updated_at=NOW - i * 7.0,
            )
        )
    return out


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LedgerTable(id="table")


def stock(table: LedgerTable, row: int, column: int, cursor: bool, hover: bool) -> object:
    """DataTable's own rendering of the cell, its cache bypassed."""
    table._cell_render_cache.clear()
    width = table.ordered_columns[column].get_render_width(table)
    base = table._get_row_style(row, table.rich_style)
    return DataTable._render_cell(table, row, column, base, width, cursor, hover)


def ours(table: LedgerTable, row: int, column: int, cursor: bool, hover: bool) -> object:
    width = table.ordered_columns[column].get_render_width(table)
    base = table._get_row_style(row, table.rich_style)
    return table._render_cell(row, column, base, width, cursor, hover)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
async def test_every_cell_is_drawn_as_datatable_draws_it(theme: str) -> None:
    app = TableApp()
    async with app.run_test(size=(160, 40)) as pilot:
        app.theme = theme
        table = app.query_one(LedgerTable)
        shown = rows()
        table.show_rows(shown, NOW, {shown[2].idem}, dead=["x"])
        await pilot.pause()
        drawn_here = 0
        for row in range(len(shown)):
            for column in range(len(table.ordered_columns)):
                for cursor in (False, True):
                    for hover in (False, True):
                        expected = stock(table, row, column, cursor, hover)
                        assert ours(table, row, column, cursor, hover) == expected, (
                            row,
                            column,
                            cursor,
                            hover,
                        )
                        cell = table._data[table._row_locations.get_key(row)][  # type: ignore[index]
                            table._column_locations.get_key(column)  # type: ignore[index]
                        ]
                        if ledger_table._plain_text(cell):
                            drawn_here += 1
        # The comparison is of the table's own drawing, not DataTable's twice.
        assert table._plain_cells and drawn_here > len(shown) * 9 * 4 * 0.8


async def test_cells_it_cannot_draw_plainly_are_left_to_datatable() -> None:
    for cell in (
        Text("模型超时"),
        Text("tab\there"),
        Text("line\nbreak"),
        Text.assemble(("red", "bold red"), " and plain"),
        Text("cropped", no_wrap=True),
        Text("x", overflow="ellipsis"),
        "a str",
    ):
        assert not ledger_table._plain_text(cell), cell
    assert ledger_table._plain_text(Text("réponse…", style=Style(color="red")))

    app = TableApp()
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(4), NOW, set())
        await pilot.pause()
        # A text longer than its column: DataTable crops it.
        key = table._row_locations.get_key(1)
        assert key is not None
        table.update_cell(key, "model", Text("m" * 40))
        width = table.ordered_columns[3].get_render_width(table)
        base = table._get_row_style(1, table.rich_style)
        assert table._plain_cell(1, 3, base, width, False, False) is None
        assert ours(table, 1, 3, False, False) == stock(table, 1, 3, False, False)


async def test_column_widths_are_datatable_s() -> None:
    app = TableApp()
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(), NOW, set())
        await pilot.pause()
        ours_widths = [c.content_width for c in table.ordered_columns]
        for column in table.ordered_columns:  # as add_column left them
            if column.auto_width:
                column.content_width = column.label.cell_len
        DataTable._update_dimensions(table, list(table.rows))
        assert [c.content_width for c in table.ordered_columns] == ours_widths


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_the_console_looks_the_same_without_the_table_s_own_drawing(
    seeded: Seeded, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    screens = []
    for own in (True, False):
        if not own:
            monkeypatch.setattr(LedgerTable, "_plain_cell", lambda *a, **k: None)
            monkeypatch.setattr(LedgerTable, "_update_dimensions", DataTable._update_dimensions)
        app = seeded.app()
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await pilot.press("down", "down")
            await settle(pilot)
            screens.append(app.export_screenshot())
            drawn = len(app.table._plain_cells)
        assert (drawn > 0) is own
    # The SVG names its elements after a hash of the title and content: equal pictures.
    assert screens[0] == screens[1]


def test_a_plain_cell_has_the_layout_rich_gives_it() -> None:
    """The layout `_draw_plain` builds, written out once (the other tests compare it
    with Rich's; this one says what it is)."""
    table = LedgerTable()
    style = Style(color="red")
    table._get_styles_to_render_cell = lambda *a: (Style(), Style())  # type: ignore[assignment]
    base = Style(bgcolor="black")
    meta = Style.from_meta({"row": 0, "column": 2})
    left = table._draw_plain(0, 2, base, 10, False, False, "ab", style, None)
    plain = base + meta
    assert left == [
        [
            Segment(" ", plain),
            Segment("ab", plain + style),
            Segment("      ", plain),
            Segment(" ", plain),
        ]
    ]
    right = table._draw_plain(0, 2, base, 6, False, False, "7", Style.null(), "right")
    assert right == [[Segment(" ", plain), Segment("   7", plain), Segment(" ", plain)]]
