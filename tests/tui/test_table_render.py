"""The ledger table is drawn on Textual's Line API (widgets/line_rows.py,
line_paint.py) and must look exactly as Textual's stock `DataTable` with a
row cursor and zebra stripes, given the same columns and cells, looks.

Compared through public API only: both tables' `render_lines` (every
segment, its text and style, the mouse's row and column in it), for the
cursor on several rows, scrolled down and sideways, the mouse over a row,
unfocused, in a dark and a light theme, at 160×40 and 80×24; and the whole
screen as an SVG. Also: only the lines on screen are drawn, a changed cell
draws its line again, columns fit the window shown.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import DataTable

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui import columns
from reclaim_tui.tui.widgets import line_rows, table_cells
from reclaim_tui.tui.widgets.ledger_table import LedgerTable
from reclaim_tui.tui.widgets.line_paint import Look, Styles, draw_line

from .conftest import Seeded
from .pilot_helpers import settle

NOW = 1_800_000_000.0
ERRORS = [
    None,
    "",
    "boom",
    "429 RESOURCE_EXHAUSTED: quota exceeded for gemini-3-pro " * 3,  # cut to the column
    "erreur: réponse tronquée…",  # one cell per character, not ASCII
    "模型超时",  # wide characters
]
MODELS = ["gemini-3-flash", "gemini-3-pro-preview", "deep-research-pro-preview-12-2025", "模型"]


def rows(count: int = 24, prefix: str = "") -> list[Row]:
    out = []
    for i in range(count):
        out.append(
            Row(
                idem=f"{prefix}{i:032x}",
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


@pytest.fixture(autouse=True)
def every_column(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every column at any width: the tables are wider than the screen and
    scroll sideways."""
    everything = frozenset(key for key, _ in table_cells.COLUMNS)
    monkeypatch.setattr(columns, "fit", lambda width, chosen=None: everything)
    monkeypatch.setattr(columns, "error_width", lambda width, shown: max(16, width - 118))


class TableApp(App[None]):
    TITLE = "a table"  # the same as the stock one's: the SVG's ids hash it

    def compose(self) -> ComposeResult:
        yield LedgerTable(id="table")


class StockApp(App[None]):
    """Textual's DataTable, filled through its public API with what the ledger table shows."""

    TITLE = "a table"
    CSS = "DataTable { height: 1fr; } DataTable > .datatable--header { text-style: bold; }"

    def __init__(self, source: LedgerTable) -> None:
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        yield DataTable(id="table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for column in self.source.ordered_columns:
            width = None if column.auto_width else column.width
            table.add_column(column.label.copy(), key=column.key, width=width)
        for key in self.source.row_keys():
            table.add_row(*self.source.get_row(key), key=key)


Step = tuple[str, object]


async def paint(
    app: App[None], pilot: Pilot[None], steps: list[Step]
) -> tuple[list[list[Segment]], str]:
    """The table's lines and the whole screen, after `steps`."""
    table = app.query_one("#table")
    for what, value in steps:
        if what == "cursor":
            table.move_cursor(row=value, animate=False)  # type: ignore[attr-defined]
        elif what == "scroll_x":
            table.scroll_to(x=value, animate=False)
        elif what == "theme":
            app.theme = str(value)
        elif what == "blur":
            app.set_focus(None)
        for _ in range(3):
            await pilot.pause()
    crop = Region(0, 0, table.size.width, table.size.height)
    return [list(strip) for strip in table.render_lines(crop)], app.export_screenshot()


Painted = tuple[list[list[Segment]], str]


async def both(
    size: tuple[int, int], shown: list[Row], steps: list[Step], hover: int | None = None
) -> list[Painted]:
    """Ours, then the stock table's, with the same cells and the same steps."""
    out = []
    ours = TableApp()
    async with ours.run_test(size=size) as pilot:
        table = ours.query_one(LedgerTable)
        table.show_rows(shown, NOW, {shown[3].idem}, dead=["x"])
        await pilot.pause()
        if hover is not None:
            await pilot.hover("#table", offset=(4, hover))
        out.append(await paint(ours, pilot, steps))
        stock = StockApp(table)
        async with stock.run_test(size=size) as stock_pilot:
            await stock_pilot.pause()
            if hover is not None:
                await stock_pilot.hover("#table", offset=(4, hover))
            out.append(await paint(stock, stock_pilot, steps))
    return out


CASES: list[list[Step]] = [
    [],
    [("cursor", 1)],
    [("cursor", 6), ("scroll_x", 7)],
    [("cursor", 23)],  # scrolled down
    [("theme", "textual-light"), ("cursor", 2)],
    [("cursor", 4), ("blur", None)],  # the cursor's unfocused colours
]


@pytest.mark.parametrize("size", [(160, 40), (80, 24)])
@pytest.mark.parametrize("steps", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_every_line_is_drawn_as_datatable_draws_it(
    size: tuple[int, int], steps: list[Step]
) -> None:
    (ours, our_screen), (stock, stock_screen) = await both(size, rows(), steps)
    for y, (a, b) in enumerate(zip(ours, stock, strict=True)):
        assert a == b, (steps, y)
    # The SVG names its elements after a hash of the title and content: equal pictures.
    assert our_screen == stock_screen


async def test_the_row_under_the_mouse_is_drawn_as_datatable_draws_it() -> None:
    (ours, _), (stock, _) = await both((160, 40), rows(), [("cursor", 5)], hover=3)
    assert ours == stock
    assert ours[3] != ours[4]  # the hovered row (2) differs from a plain one


def test_a_cell_s_layout() -> None:
    """What a cell is, written out: padding, text, fill, padding; a right-justified
    text after its fill; a text longer than its column cropped; the row's
    style filling the width."""
    plain = Style()
    look = Look(plain, plain, plain, plain, plain, plain, plain, zebra=False, padding=1)
    red = Style(color="red")
    parts = [("ab", red, "left", 6), ("7", plain, "right", 4)]
    strip = draw_line(look, Styles(), 0, parts, False, False, plain, 0, 12)
    assert strip.text == " ab     7   "
    assert [s.text for s in strip if s.style and s.style.color == red.color] == ["ab"]
    cropped = draw_line(
        look, Styles(), 0, [("abcdefgh", plain, "left", 6)], False, False, plain, 0, 6
    )
    assert cropped.text == " abcd "


async def test_only_the_lines_on_screen_are_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[int] = []
    real = line_rows.draw_line

    def counting(look, styles, row, *rest):  # type: ignore[no-untyped-def]
        drawn.append(row)
        return real(look, styles, row, *rest)

    monkeypatch.setattr(line_rows, "draw_line", counting)
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(rows(1000), NOW, set())
        await pilot.pause()
        await pilot.pause()
        assert table.row_count == 1000
        assert drawn and max(drawn) < table.size.height and len(set(drawn)) <= table.size.height
        drawn.clear()
        await pilot.press("down")
        await pilot.pause()
        # The old cursor row and the new one, not the screen.
        assert sorted(set(drawn)) == [0, 1], drawn


async def test_a_changed_cell_draws_its_line_again() -> None:
    app = TableApp()
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(LedgerTable)
        shown = rows(6)
        table.show_rows(shown, NOW, set())
        await pilot.pause()
        crop = Region(0, 2, 160, 1)  # row 1, under the header
        first = table.render_lines(crop)[0]
        # The once-a-second refresh: ages moved, the same rows.
        table.show_rows(shown, NOW + 61, set())
        await pilot.pause()
        again = table.render_lines(crop)[0]
        assert again.text != first.text
        table.set_mark(shown[1].idem, True)
        await pilot.pause()
        assert table.render_lines(crop)[0].text.startswith(" ●")


async def test_the_handle_column_fits_the_window_shown_not_the_first() -> None:
    """Issue 25, 8: the handle column kept the width of the longest handle it
    had ever shown, squeezing the error column after a window of long
    handles was left."""
    app = TableApp()
    async with app.run_test(size=(200, 30)) as pilot:
        table = app.query_one(LedgerTable)
        long_rows = [replace(r, handle="v1_" + "x" * 60) for r in rows(6)]
        table.show_rows(long_rows, NOW, set())
        await pilot.pause()
        handle = table.columns["handle"]
        wide = handle.render_width(table.cell_padding)
        short_rows = [replace(r, handle="v1_short") for r in rows(6, prefix="s")]
        table.show_rows(short_rows, NOW, set())
        await pilot.pause()
        assert handle.render_width(table.cell_padding) < wide
        assert handle.render_width(table.cell_padding) <= len("v1_short") + 2 * table.cell_padding


async def test_the_header_takes_the_widths_the_new_rows_bring() -> None:
    """A header drawn right after new rows arrived has their widths (the
    screenshot test failed once on a header drawn at the labels' widths)."""
    app = TableApp()
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(LedgerTable)
        await pilot.pause()
        empty = table.render_lines(Region(0, 0, 160, 1))[0]
        table.show_rows(rows(6), NOW, set())
        header = table.render_lines(Region(0, 0, 160, 1))[0]
        assert header.text != empty.text
        widths = [c.render_width(table.cell_padding) for c in table.ordered_columns]
        model = sum(widths[:3])
        assert header.text[model:].startswith(" model")
        assert widths[3] == len(MODELS[2]) + 2


async def test_the_console_draws_its_table_on_the_line_api(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        table = app.table
        assert isinstance(table, line_rows.LineRows)
        assert not isinstance(table, DataTable)
        assert table.row_count == len(table.rows_shown) > 0
        cells = table.get_row(table.current_idem() or "")
        assert all(isinstance(c, Text) for c in cells)


async def test_a_new_window_of_the_same_shape_lays_nothing_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new virtual size lays the whole screen out again (every widget drawn
    anew): a new window of as many rows, its columns a little narrower or
    wider, must leave the table's virtual size as it was."""
    monkeypatch.setattr(columns, "error_width", lambda width, shown: 30)  # the table fits
    app = TableApp()
    async with app.run_test(size=(240, 40)) as pilot:
        table = app.query_one(LedgerTable)
        shown = rows(30)
        table.show_rows(shown, NOW, set())
        await pilot.pause()
        sizes: list[object] = []

        def changed(size: object) -> None:
            sizes.append(size)

        table.watch(table, "virtual_size", changed, init=False)
        other = [replace(r, handle="v1_h", model="m") for r in rows(30, prefix="n")]
        table.show_rows(other, NOW + 5, set(), cursor=3)
        await pilot.pause()
        table.show_rows(shown[::-1], NOW + 9, set(), cursor="top")
        await pilot.pause()
        assert table.cursor_row == 0 and table.current_idem() == shown[-1].idem
        assert sizes == []
        # A window of another length does change it, once.
        table.show_rows(shown[:7], NOW + 12, set())
        await pilot.pause()
        assert len(sizes) == 1
