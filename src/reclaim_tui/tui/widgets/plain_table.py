"""A DataTable that draws rows of plain one-line cells itself (issue 14: the
console under load), exactly as DataTable would draw them. It knows nothing
of the ledger: the ledger table (ledger_table.py) is a PlainTable with rows,
windows and paging. tests/tui/test_table_render.py compares both drawings:
cell by cell, line by line, column widths, and a whole screen.

Cells (`_render_cell`). DataTable renders every visible cell through Rich
(Styled(Padding(Text)), `console.render_lines`) and keys its cache on a
counter that any `update_cell` bumps: the once-a-second refresh of the ages
and every new window re-rendered ~480 cells at ~0.12 ms each, the console's
largest cost under load. A one-line cell of plain text (`plain_text`: no
spans, no wide or control characters, fitting its column) comes out of Rich
as a padding space, the text, the fill and a padding space, each styled
`base + row/column meta + cursor/hover style [+ the text's style] + post
style`; that is built here without Rich (`cell_segments`) and kept by what it
is made of. Anything else (the header, a fixed cell, a taller row, a cell
that would be cropped or hold a wide character) is DataTable's.

Lines (`_render_line`). DataTable keys its line and row caches on the same
counter, so the refresh of the ages and every cursor move drew each visible
line again through `_render_line_in_row`, whose bookkeeping per cell (a
Coordinate, the cursor and hover tests, the column's width, the row's zebra
style) cost as much as drawing the cells themselves. Here a data row whose
cells are all plain is drawn from those cells and kept by what it is made
of: a moved cursor draws two lines again, not the screen. Anything else (the
header, labels, fixed rows or columns, another cursor type, a taller row, a
cell DataTable must draw) is DataTable's.

Widths (`_update_dimensions`): a plain cell's width is its length, not
measured through Rich (a new window measured its ~1,000 cells that way: a
third of its cost).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._segment_tools import line_crop
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

__all__ = ["PLAIN_CELLS_KEPT", "PLAIN_LINES_KEPT", "PlainTable", "plain_text"]

#: Plain cells whose segments are kept (four screens' worth; then drawn afresh: each
#: kept cell is ~8 objects the garbage collector scans).
PLAIN_CELLS_KEPT = 2048
#: Lines drawn by `_plain_line` that are kept (five 48-row screens).
PLAIN_LINES_KEPT = 256


def plain_text(cell: object) -> bool:
    """A one-line Text of characters one cell wide each, without spans or
    overflow settings: the cells `PlainTable` measures and draws itself."""
    if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
        return False
    plain = cell.plain
    return plain.isprintable() and cell_len(plain) == len(plain)


def cell_segments(
    pad: int, room: int, pre: Style, post: Style, plain: str, text_style: Style, justify: str | None
) -> list[list[Segment]]:
    """A plain cell's line as Rich draws Styled(Padding(Text)): a padding
    space, the text, the fill and a padding space (a right-justified text
    after its fill), each styled `pre [+ the text's style] + post`."""
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


class PlainTable(DataTable[Text]):
    """DataTable, drawing its plain one-line cells and lines itself (module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        # Before DataTable's own: its watchers clear these caches.
        #: Cells drawn by `_plain_cell`, by what they are made of.
        self._plain_cells: dict[tuple[object, ...], list[list[Segment]]] = {}
        #: Lines drawn by `_plain_line`, by what they are made of.
        self._plain_lines: dict[tuple[object, ...], Strip] = {}
        #: Zebra row styles, by row parity and base style (see `_get_row_style`).
        self._row_styles: dict[tuple[object, ...], Style] = {}
        #: The widget's style while `render_lines` runs (see `render_line`).
        self._painting: Style | None = None
        super().__init__(**kwargs)

    def _cursor_look(self) -> tuple[object, ...]:
        """What else a drawn cell or line looks like: the cursor's and hover's settings."""
        return (
            self.show_cursor,
            self._show_hover_cursor,
            self.cursor_foreground_priority,
            self.cursor_background_priority,
            self._pseudo_class_state,
        )

    def _cursor_styles(
        self, cursor: bool, hover: bool, *, css_priorities: bool
    ) -> tuple[Style, Style]:
        """DataTable's styles of a data cell (not a header, label or fixed cell)."""
        return self._get_styles_to_render_cell(
            False,
            False,
            False,
            hover,
            cursor,
            self.show_cursor,
            self._show_hover_cursor,
            css_priorities and self.cursor_foreground_priority == "css",
            css_priorities and self.cursor_background_priority == "css",
        )

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
        """One screen line: DataTable's, drawn directly for a row of plain cells
        (module docstring, "Lines")."""
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
            self._cursor_look(),
            self.zebra_stripes,
            self._row_label_column_width,
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
        extend_style, _ = self._cursor_styles(cursor, hover, css_priorities=False)
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
        """DataTable's, a plain cell's width taken as its length (module docstring)."""
        columns, rest = self.ordered_columns, []
        for row_key in new_rows:
            row = self.rows.get(row_key)
            if row is None or row_key not in self._row_locations:
                continue  # removed before the table was idle: DataTable skips it too
            data = self._data[row_key]
            cells = [data.get(column.key) for column in columns]
            if row.label is not None or row.auto_height or not all(plain_text(c) for c in cells):
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
        table draws (module docstring, "Cells")."""
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
        if not plain_text(cell):
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
            self._cursor_look(),
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
        component, post = self._cursor_styles(cursor, hover, css_priorities=True)
        pre = base_style + Style.from_meta({"row": row_index, "column": column_index}) + component
        pad = self.cell_padding
        return cell_segments(pad, width - 2 * pad, pre, post, plain, text_style, justify)
