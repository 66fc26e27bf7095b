"""A DataTable that draws rows of plain one-line cells itself (the
console under load), exactly as DataTable would draw them. It knows nothing
of the ledger: the ledger table (ledger_table.py) is a PlainTable with rows,
windows and paging. tests/tui/test_table_render.py compares both drawings:
cell by cell, line by line, column widths, and a whole screen.

Cells (`_render_cell`): plain_cells.py's `PlainCells`, which this table is.

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
measured through Rich (a new window measured all its cells that way: a
good part of its cost).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual._segment_tools import line_crop
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets.data_table import DuplicateKey, Row, RowKey

from reclaim_tui.tui.widgets.plain_cells import (
    PLAIN_CELLS_KEPT,
    PLAIN_LINES_KEPT,
    Paint,
    PlainCells,
    plain_text,
)

__all__ = ["PLAIN_CELLS_KEPT", "PLAIN_LINES_KEPT", "PlainTable", "plain_text"]


class PlainTable(PlainCells):
    """DataTable, drawing its plain one-line cells and lines itself (module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        # Before DataTable's own: its watchers clear these caches.
        #: Lines drawn by `_plain_line`, by what they are made of.
        self._plain_lines: dict[tuple[object, ...], Strip] = {}
        #: Zebra row styles, by row parity and base style (see `_get_row_style`).
        self._row_styles: dict[tuple[object, ...], Style] = {}
        super().__init__(**kwargs)

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._plain_lines.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # What the cursor, hover and zebra stripes look like may have changed.
        self._plain_lines.clear()
        self._row_styles.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line needs is read once a paint, not once a line:
        # `rich_style` walks the ancestors, and a paint draws every line.
        self._painting = self._paint(self.rich_style)
        try:
            return super().render_lines(crop)
        finally:
            self._painting = None

    def render_line(self, y: int) -> Strip:
        paint = self._painting
        if paint is None:
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
        return self._render_line(y, scroll_x, scroll_x + paint.width, paint.base_style)

    def _get_row_style(self, row_index: int, base_style: Style) -> Style:
        """DataTable's, kept: it resolves a component's CSS for every
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
        paint = self._painting or self._paint(base_style)
        if not paint.own_lines:
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
        data = self._data[row_key]
        parts: list[tuple[str, Style | str, str | None, int]] = []
        for column, width in zip(paint.columns, paint.widths, strict=True):
            cell = data.get(column.key)
            if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
                return None
            parts.append((cell.plain, cell.style, cell.justify, width))
        cursor = row_index == paint.cursor_row
        hover = row_index == paint.hover_row
        key = (
            row_index,
            x1,
            x2,
            paint.width,
            base_style,
            cursor,
            hover,
            paint.look,
            paint.zebra,
            paint.label_width,
            tuple(parts),
        )
        strip = self._plain_lines.get(key)
        if strip is None:
            strip = self._draw_line(row_index, x1, x2, paint, base_style, cursor, hover, parts)
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
        paint: Paint,
        base_style: Style,
        cursor: bool,
        hover: bool,
        parts: list[tuple[str, Style | str, str | None, int]],
    ) -> Strip | None:
        """The line as `DataTable._render_line_in_row` and `_render_line` build it:
        the cells, then a space filling the widget's width in the row's style."""
        row_style = self._get_row_style(row_index, base_style)
        segments: list[Segment] = []
        table_width = paint.label_width
        for column_index, (plain, style, justify, cell_width) in enumerate(parts):
            table_width += cell_width
            lines = self._cell_of(
                paint, row_index, column_index, row_style, cell_width, cursor, hover, plain, style,
                justify,
            )  # fmt: skip
            if lines is None:
                return None  # a cell DataTable must draw (too long, a wide character...)
            segments.extend(lines[0])
        _, _, extend_style = self._place(row_index, -1, row_style, cursor, hover, paint.look)
        segments.append(Segment(" " * max(0, paint.width - table_width), extend_style))
        width = paint.width
        return (
            Strip(line_crop(segments, x1, x2, width))
            .adjust_cell_length(width, base_style)
            .simplify()
        )

    # -- rows --------------------------------------------------------------------------
    def add_plain_rows(self, rows: Iterable[tuple[str, list[Text]]]) -> None:
        """`add_row(*cells, key=key)` for each (key, cells), one line high and
        unlabelled: what DataTable does once a row (the columns' order, the
        cursor's clamp, the idle check: most of a new window's rows' cost)
        done once for them all."""
        columns, added, was_empty = self.ordered_columns, 0, not self.rows
        for key, cells in rows:
            row_key = RowKey(key)
            if row_key in self._row_locations:
                raise DuplicateKey(f"The row key {row_key!r} already exists.")
            if len(cells) > len(columns):
                raise ValueError("More values provided than there are columns.")
            self._row_locations[row_key] = len(self.rows)
            self._data[row_key] = {column.key: cell for column, cell in zip_longest(columns, cells)}
            self.rows[row_key] = Row(row_key, 1, None, False)
            self._new_rows.add(row_key)
            self._update_count += 1
            added += 1
        if not added:
            return
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        # As add_row: a cursor that had no row to be on has one now.
        if was_empty and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()
        self.check_idle()

    # -- widths ------------------------------------------------------------------------
    async def _on_idle(self, event: events.Idle) -> None:
        # DataTable measures new rows when idle, and keys a drawn header on
        # its update counter, which measuring does not move: a header drawn
        # between the rows' arrival and this kept the labels' widths over
        # rows drawn at theirs (a screenshot test, once). Wider columns
        # draw every line anew. Both of DataTable's width updates (new rows,
        # changed cells) happen in its idle, hence here. Textual then calls
        # DataTable's own `_on_idle` too (one handler per class of the MRO),
        # which finds nothing left to do (two flags read).
        widths = [column.content_width for column in self.ordered_columns]
        await super()._on_idle(event)
        if widths != [column.content_width for column in self.ordered_columns]:
            self._update_count += 1
            self.refresh()

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
