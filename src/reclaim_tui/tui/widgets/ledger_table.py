"""The ledger table: one window of rows; moving past its edge asks for the next."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._segment_tools import line_crop
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui import columns
from reclaim_tui.tui.format import age, next_poll, short, shorten_error
from reclaim_tui.tui.state import Cursor

__all__ = ["COLUMNS", "LedgerTable"]

COLUMNS = (
    ("mark", " "),
    ("idem", "key"),
    ("status", "status"),
    ("model", "model"),
    ("handle", "handle"),
    ("attempts", "att"),
    ("age", "age in state"),
    ("next", "next poll"),
    ("updated", "updated"),
    ("error", "last error"),
)
#: Status → theme variable (resolved from the running theme, never hard-coded).
STATUS_COLOURS = {
    Status.RESERVING: "warning",
    Status.SUBMITTED: "foreground",
    Status.DONE: "primary-lighten-2",
    Status.CONSUMED: "success",
    Status.FAILED: "error",
    Status.CANCELLED: "foreground-darken-3",
}
#: Plain cells whose segments are kept (four screens' worth; then drawn afresh: each
#: kept cell is ~8 objects the garbage collector scans).
PLAIN_CELLS_KEPT = 2048
#: Lines drawn by `_plain_line` that are kept (five 48-row screens).
PLAIN_LINES_KEPT = 256


def _plain_text(cell: object) -> bool:
    """A one-line Text of characters one cell wide each, without spans or
    overflow settings: the cells `LedgerTable` measures and draws itself."""
    if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
        return False
    plain = cell.plain
    return plain.isprintable() and cell_len(plain) == len(plain)


class LedgerTable(DataTable[Text]):
    """Shows a page; `PageRequested` when the cursor runs off either edge."""

    DEFAULT_CSS = """
    LedgerTable { height: 1fr; }
    LedgerTable > .datatable--header { text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # DataTable's home/end scroll sideways; here they go to the view's ends.
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
        Binding("enter", "select_cursor", "Detail"),  # shown: the footer lists enter (D9)
    ]

    @dataclass
    class PageRequested(Message):
        """The cursor is crossing an edge of the window: show the window in
        `direction` with the cursor on its row `cursor` (negative: from its end)."""

        direction: Literal["after", "before", "first", "last"]
        cursor: int = 0

    @dataclass
    class SortRequested(Message):
        column: str

    def __init__(self, *, id: str | None = None) -> None:
        # Before DataTable's own: its watchers clear these caches.
        #: Cells drawn by `_plain_cell`, by what they are made of.
        self._plain_cells: dict[tuple[object, ...], list[list[Segment]]] = {}
        #: Lines drawn by `_plain_line`, by what they are made of.
        self._plain_lines: dict[tuple[object, ...], Strip] = {}
        #: Zebra row styles, by row parity and base style (see `_get_row_style`).
        self._row_styles: dict[tuple[object, ...], Style] = {}
        #: The widget's style while `render_lines` runs (see `render_line`).
        self._painting: Style | None = None
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.has_before = False
        self.has_after = False
        self.rows_shown: list[Row] = []
        self._drawn: list[list[Text]] = []
        #: The window asked for and not shown yet, and where its cursor goes:
        #: keys pressed meanwhile move that target instead of asking again.
        self._asked: tuple[str, int] | None = None
        #: Windows drawn so far (benchmarks and tests wait on it).
        self.renders = 0
        #: The columns the operator chose (None: all) and those shown (tui/columns.py).
        self.chosen: tuple[str, ...] | None = None
        self.shown: frozenset[str] = frozenset()
        self._shown_at: list[int] = []

    def on_mount(self) -> None:
        self._lay_out()

    def choose_columns(self, chosen: tuple[str, ...] | None) -> None:
        """Show these columns (config.COLUMN_NAMES; None: all), as many as fit."""
        self.chosen = chosen
        self._lay_out()

    def _lay_out(self) -> None:
        """Add the columns that fit the width (tui/columns.py); when the set
        changes, the rows on screen are put back under the new columns."""
        shown = columns.fit(self.size.width, self.chosen)
        if shown == self.shown and self.columns:
            return
        self.shown = shown
        self._shown_at = [i for i, (key, _) in enumerate(COLUMNS) if key in shown]
        cursor = self.cursor_row
        self.clear(columns=True)
        for key, label in COLUMNS:
            if key in shown:
                width = self._error_width() if key == "error" else None
                self.add_column(label, key=key, width=width)
        for row, cells in zip(self.rows_shown, self._drawn, strict=True):
            self.add_row(*self._visible(cells), key=row.idem)
        if self.rows_shown:
            self.move_cursor(row=max(0, min(cursor, len(self.rows_shown) - 1)), animate=False)

    def _visible(self, cells: list[Text]) -> list[Text]:
        return [cells[i] for i in self._shown_at]

    def _error_width(self) -> int:
        return columns.error_width(self.size.width, self.shown)

    def on_resize(self) -> None:
        self._lay_out()
        column = self.columns.get(ColumnKey("error"))
        if column is not None and column.width != self._error_width():
            column.width = self._error_width()
            self._require_update_dimensions = True
            self.refresh()

    # -- rendering -------------------------------------------------------------------
    def _styles(self) -> dict[Status, Style]:
        variables = self.app.theme_variables
        return {s: Style.parse(variables.get(v, "")) for s, v in STATUS_COLOURS.items()}

    def show_rows(
        self,
        rows: list[Row],
        now: float,
        marks: set[str],
        dead: Iterable[str] = (),
        cursor: Cursor = "keep",
    ) -> None:
        """Replace the window; the cursor goes to `cursor` ("top", "bottom", a
        row index, negative from the end) or, by default, stays on its row
        when it is still shown.

        The same rows in the same order (the usual refresh: only ages moved)
        are updated cell by cell, so the table neither flickers nor scrolls.
        """
        asked, self._asked = self._asked, (self._asked if cursor == "keep" else None)
        styles = self._styles()
        dead = set(dead)
        cells = [self._cells(row, now, marks, dead, styles) for row in rows]
        same = [r.idem for r in rows] == [r.idem for r in self.rows_shown]
        # The row under the cursor, read before the window is replaced: read
        # after, it is whichever new row sits at the old index.
        current, index = self.current_idem(), self.cursor_row
        self.rows_shown = rows
        self.renders += 1
        if same and cursor == "keep" and len(self._drawn) == len(cells):
            self._update_cells(rows, cells)
            return
        self.clear()
        for row, row_cells in zip(rows, cells, strict=True):
            self.add_row(*self._visible(row_cells), key=row.idem)
        self._drawn = cells
        if not rows:
            return
        if isinstance(cursor, int):
            if asked is not None:
                cursor = asked[1]  # with the keys pressed while it loaded
            target = cursor if cursor >= 0 else len(rows) + cursor
        elif cursor in ("top", "bottom"):
            target = 0 if cursor == "top" else len(rows) - 1
        else:
            keys = [r.idem for r in rows]
            target = keys.index(current) if current in keys else index
        self.move_cursor(row=max(0, min(target, len(rows) - 1)), animate=False)

    def _update_cells(self, rows: list[Row], cells: list[list[Text]]) -> None:
        for row, new, old in zip(rows, cells, self._drawn, strict=True):
            for (key, _), a, b in zip(COLUMNS, new, old, strict=True):
                if key not in self.shown:
                    continue
                if a.plain != b.plain or a.style != b.style:
                    self.update_cell(row.idem, key, a)
        self._drawn = cells

    # -- drawing a line ------------------------------------------------------------------
    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._plain_lines.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # What the cursor, hover and zebra stripes look like may have changed.
        self._plain_lines.clear()
        self._plain_cells.clear()
        self._row_styles.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style is worked out once a paint, not once a line:
        # `rich_style` walks the ancestors (~25 us, x 50 lines, every paint).
        self._painting = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._painting = None

    def render_line(self, y: int) -> Strip:
        base_style = self._painting
        if base_style is None:
            return super().render_line(y)
        # DataTable's, with the style worked out in `render_lines`.
        scroll_x, scroll_y = self.scroll_offset
        fixed_height = self.header_height if self.show_header else 0
        for row_index in range(self.fixed_rows):
            row_key = self._row_locations.get_key(row_index)
            if row_key is not None:
                fixed_height += self.get_row_height(row_key)
        if y >= fixed_height:
            y += scroll_y
        return self._render_line(y, scroll_x, scroll_x + self.size.width, base_style)

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        """DataTable's, kept: it resolves a component's CSS (~70 us) for every
        line drawn. Cleared with the styles (`notify_style_update`)."""
        if row_index < max(0, self.fixed_rows) or not self.zebra_stripes:
            return super()._get_row_style(row_index, base_style)
        key = (row_index % 2, base_style, self._pseudo_class_state)
        style = self._row_styles.get(key)
        if style is None:
            if len(self._row_styles) >= 64:
                self._row_styles.clear()
            style = self._row_styles[key] = super()._get_row_style(row_index, base_style)
        return style

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """One screen line: DataTable's, drawn directly for a row of plain cells.

        DataTable keys its line and row caches on a counter that every
        `update_cell` bumps, so the once-a-second refresh of the ages and every
        cursor move drew each visible line again through `_render_line_in_row`,
        whose bookkeeping per cell (a Coordinate, the cursor and hover tests,
        the column's width, the row's zebra style) cost as much as drawing the
        cells themselves. Here a data row whose cells are all plain one-line
        text (see `_render_cell`) is drawn from those cells and kept by what it
        is made of: a moved cursor draws two lines again, not the screen.
        Anything else (the header, labels, fixed rows or columns, another
        cursor type, a taller row, a cell DataTable must draw) is DataTable's;
        tests/tui/test_table_render.py compares both line by line.
        """
        strip = self._plain_line(y, x1, x2, base_style)
        return strip if strip is not None else super()._render_line(y, x1, x2, base_style)

    def _plain_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip | None:
        if (
            self.cursor_type != "row"
            or self.fixed_rows
            or self.fixed_columns
            or (self._labelled_row_exists and self.show_row_labels)
        ):
            return None
        try:
            row_key, line_no = self._get_offsets(y)
        except LookupError:
            return None  # past the last row: DataTable's blank line
        if line_no or row_key is self._header_row_key:
            return None
        row = self.rows.get(row_key)
        row_index = self._row_locations.get(row_key)
        if row is None or row_index is None or row.height != 1:
            return None
        columns = self.ordered_columns
        data = self._data[row_key]
        parts: list[tuple[object, ...]] = []
        for column in columns:
            cell = data.get(column.key)
            if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
                return None
            parts.append((cell.plain, cell.style, cell.justify, column.get_render_width(self)))
        width = self.size.width
        cursor = row_index == self.cursor_coordinate.row
        hover = row_index == self.hover_coordinate.row
        key = (
            row_index,
            x1,
            x2,
            width,
            base_style,
            cursor,
            hover,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            self.zebra_stripes,
            self._row_label_column_width,
            self._pseudo_class_state,
            tuple(parts),
        )
        strip = self._plain_lines.get(key)
        if strip is None:
            strip = self._draw_line(row_index, x1, x2, width, base_style, cursor, hover, parts)
            if strip is None:
                return None
            if len(self._plain_lines) >= PLAIN_LINES_KEPT:
                self._plain_lines.clear()
            self._plain_lines[key] = strip
        return strip

    def _draw_line(
        self,
        row_index: int,
        x1: int,
        x2: int,
        width: int,
        base_style: Style,
        cursor: bool,
        hover: bool,
        parts: list[tuple[object, ...]],
    ) -> Strip | None:
        """The line as `DataTable._render_line_in_row` and `_render_line` build it:
        the cells, then a space filling the widget's width in the row's style."""
        row_style = self._get_row_style(row_index, base_style)
        segments: list[Segment] = []
        table_width = self._row_label_column_width
        for column_index, part in enumerate(parts):
            cell_width = part[-1]
            assert isinstance(cell_width, int)
            table_width += cell_width
            lines = self._plain_cell(row_index, column_index, row_style, cell_width, cursor, hover)
            if lines is None:
                return None  # a cell DataTable must draw (too long, a wide character...)
            segments.extend(lines[0])
        extend_style, _ = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            False,
            False,
        )
        extend_style = (
            row_style
            + extend_style
            + Style.from_meta({"row": row_index, "column": 0, "out_of_bounds": True})
        )
        segments.append(Segment(" " * max(0, width - table_width), extend_style))
        return (
            Strip(line_crop(segments, x1, x2, width))
            .adjust_cell_length(width, base_style)
            .simplify()
        )

    # -- drawing a cell ------------------------------------------------------------------
    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable's, with the widths of plain one-line cells taken as their
        length instead of measured through Rich (a new window measured its
        ~1,000 cells that way: a third of its cost)."""
        columns, rest = self.ordered_columns, []
        for row_key in new_rows:
            row = self.rows.get(row_key)
            if row is None or row_key not in self._row_locations:
                continue  # removed before the table was idle: DataTable skips it too
            data = self._data[row_key]
            cells = [data.get(column.key) for column in columns]
            if row.label is not None or row.auto_height or not all(_plain_text(c) for c in cells):
                rest.append(row_key)
                continue
            for column, cell in zip(columns, cells, strict=True):
                assert isinstance(cell, Text)
                width = cell_len(cell.plain)
                if width > column.content_width:
                    column.content_width = width
        super()._update_dimensions(rest)

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        """One cell's segments: DataTable's own, built directly for the cells this
        table draws.

        DataTable renders every visible cell through Rich (Styled(Padding(Text)),
        `console.render_lines`) and keys its cache on a counter that any
        `update_cell` bumps: the once-a-second refresh of the ages and every new
        window re-rendered ~480 cells at ~0.12 ms each, the console's largest
        cost under load (issue 14). A one-line cell of plain text (no spans, no
        wide or control characters, fitting its column) comes out of Rich as a
        padding space, the text, the fill and a padding space, each styled
        `base + row/column meta + cursor/hover style [+ the text's style] +
        post style`; that is built here without Rich. Anything else (the
        header, a fixed cell, a taller row, a cell that would be cropped or
        hold a wide character) is DataTable's. tests/tui/test_table_render.py
        compares both for every cell shape the table draws.
        """
        fast = self._plain_cell(row_index, column_index, base_style, width, cursor, hover)
        if fast is None:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        return fast

    def _plain_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
    ) -> list[list[Segment]] | None:
        if row_index < self.fixed_rows or column_index < self.fixed_columns or row_index < 0:
            return None  # the header, a row label, a fixed cell
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None or self.rows[row_key].height != 1:
            return None
        cell = self._data[row_key].get(column_key)
        if not _plain_text(cell):
            return None
        assert isinstance(cell, Text)
        plain, text_style = cell.plain, cell.style
        if len(plain) > width - 2 * self.cell_padding or not isinstance(text_style, Style | str):
            return None
        if isinstance(text_style, str):
            if text_style:
                return None  # a style by name: Rich's parse
            text_style = Style.null()
        justify = cell.justify
        if justify == "right" and (text_style or not plain):
            return None  # where the fill's style and an empty text were not compared
        if justify not in (None, "default", "left", "right"):
            return None
        # Keyed on what the segments are made of (not on DataTable's update
        # counter): a refresh that changed a few ages draws only those again.
        key = (
            row_index,
            column_index,
            base_style,
            width,
            cursor,
            hover,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            self._pseudo_class_state,
            plain,
            text_style,
            justify,
        )
        drawn = self._plain_cells.get(key)
        if drawn is None:
            if len(self._plain_cells) >= PLAIN_CELLS_KEPT:
                self._plain_cells.clear()
            drawn = self._plain_cells[key] = self._draw_plain(
                row_index,
                column_index,
                base_style,
                width,
                cursor,
                hover,
                plain,
                text_style,
                justify,
            )
        return drawn

    def _draw_plain(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
        plain: str,
        text_style: Style,
        justify: str | None,
    ) -> list[list[Segment]]:
        pad, room = self.cell_padding, width - 2 * self.cell_padding
        component, post = self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority == "css",
            self.cursor_background_priority == "css",
        )
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
        plain_style = pre + post
        spaces = Segment(" " * pad, plain_style)
        fill = room - len(plain)
        if justify == "right":
            return [[spaces, Segment(" " * fill + plain, pre + text_style + post), spaces]]
        line = [spaces, Segment(plain, pre + text_style + post)]
        if fill:
            line.append(Segment(" " * fill, plain_style))
        line.append(spaces)
        return [line]

    def _cells(
        self, row: Row, now: float, marks: set[str], dead: set[str], styles: dict[Status, Style]
    ) -> list[Text]:
        orphan = row.is_orphan(now, dead)
        when = "orphan" if orphan and not row.held else next_poll(row, now)
        error = shorten_error(row.last_error, self._error_width()) if row.last_error else ""
        return [
            Text("●" if row.idem in marks else " "),
            Text(short(row.idem)),
            Text(row.status.value, style=styles[row.status]),
            Text(row.model),
            Text(row.handle or "—"),
            Text(str(row.attempts), justify="right"),
            Text(age(now - row.state_since), justify="right"),
            Text(when, style=styles[Status.FAILED] if orphan else ""),
            Text(age(now - row.updated_at) + " ago", justify="right"),
            Text(error, style=styles[Status.FAILED] if error else ""),
        ]

    def current_row(self) -> Row | None:
        if 0 <= self.cursor_row < len(self.rows_shown):
            return self.rows_shown[self.cursor_row]
        return None

    def current_idem(self) -> str | None:
        row = self.current_row()
        return row.idem if row is not None else None

    def set_mark(self, idem: str, marked: bool) -> None:
        if idem in self.rows:
            cell = Text("●" if marked else " ")
            self.update_cell(idem, "mark", cell)
            index = [r.idem for r in self.rows_shown].index(idem)
            self._drawn[index][0] = cell

    # -- paging at the edges ------------------------------------------------------------
    def _page_rows(self) -> int:
        """Rows one page key moves (DataTable's own measure)."""
        header = self.header_height if self.show_header else 0
        return max(1, self.scrollable_content_region.height - header)

    def _cross(self, direction: Literal["after", "before"], step: int) -> bool:
        """Ask for the window past the edge when moving `step` rows (negative:
        up) from the cursor crosses it; False when the move stays inside."""
        target = self.cursor_row + step
        if direction == "after":
            if not self.has_after or target < self.row_count:
                return False
            landing = target - self.row_count
        else:
            if not self.has_before or target >= 0:
                return False
            landing = target  # from the end of the window before
        if self._asked is not None and self._asked[0] == direction:
            landing = self._asked[1] + step  # the keys pressed while it loads count too
        self._asked = (direction, landing)
        self.post_message(self.PageRequested(direction, landing))
        return True

    def action_cursor_down(self) -> None:
        if not self._cross("after", 1):
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if not self._cross("before", -1):
            super().action_cursor_up()

    def action_page_down(self) -> None:
        if not self._cross("after", self._page_rows()):
            super().action_page_down()

    def action_page_up(self) -> None:
        if not self._cross("before", -self._page_rows()):
            super().action_page_up()

    def action_scroll_top(self) -> None:
        self._asked = None
        self.post_message(self.PageRequested("first", 0))

    def action_scroll_bottom(self) -> None:
        self._asked = None
        self.post_message(self.PageRequested("last", -1))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = event.column_key.value or ""
        if key != "mark":
            event.stop()
            self.post_message(self.SortRequested(key))
