"""The cells of a plain table (plain_table.py): which it draws itself and how.

Cells (`_render_cell`). DataTable renders every visible cell through Rich
(Styled(Padding(Text)), `console.render_lines`) and keys its cache on a
counter that any `update_cell` bumps: the once-a-second refresh of the ages
and every new window re-rendered every visible cell, the console's
largest cost under load. A one-line cell of plain text (`plain_text`: no
spans, no wide or control characters, fitting its column) comes out of Rich
as a padding space, the text, the fill and a padding space, each styled
`base + row/column meta + cursor/hover style [+ the text's style] + post
style`; that is built here without Rich (`cell_segments`) and kept by what it
is made of. Anything else (the header, a fixed cell, a taller row, a cell
that would be cropped or hold a wide character) is DataTable's.

A new window's cells sit where the last window's did: their styles (the
place's row and column are in them, for the mouse) are kept by place, and
only the text is new. What a paint's lines share is read once (`Paint`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import Column

__all__ = [
    "PLACE_STYLES_KEPT",
    "PLAIN_CELLS_KEPT",
    "PLAIN_LINES_KEPT",
    "Paint",
    "PlainCells",
    "cell_segments",
    "plain_text",
]

#: Plain cells whose segments are kept (four screens' worth; then drawn afresh: each
#: kept cell is several objects the garbage collector scans).
PLAIN_CELLS_KEPT = 2048
#: Lines drawn by `_plain_line` that are kept (five 48-row screens).
PLAIN_LINES_KEPT = 256
#: A cell's styles by where it is (its row and column are in them, for the
#: mouse), kept across windows: a 100-row window's, cursor and hover included.
PLACE_STYLES_KEPT = 4096


def plain_text(cell: object) -> bool:
    """A one-line Text of characters one cell wide each, without spans or
    overflow settings: the cells `PlainTable` measures and draws itself."""
    if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
        return False
    plain = cell.plain
    return plain.isprintable() and cell_len(plain) == len(plain)


def cell_segments(
    pad: int, room: int, plain_style: Style, text_style: Style, plain: str, justify: str | None
) -> list[list[Segment]]:
    """A plain cell's line as Rich draws Styled(Padding(Text)): a padding
    space, the text, the fill and a padding space (a right-justified text
    after its fill); `plain_style` is `pre + post`, `text_style` is
    `pre + the text's style + post` (`PlainTable._draw_plain`)."""
    spaces = Segment(" " * pad, plain_style)
    fill = room - len(plain)
    if justify == "right":
        return [[spaces, Segment(" " * fill + plain, text_style), spaces]]
    line = [spaces, Segment(plain, text_style)]
    if fill:
        line.append(Segment(" " * fill, plain_style))
    line.append(spaces)
    return [line]


class Paint(NamedTuple):
    """What every line of one paint shares, read once (`render_lines`): each
    of a DataTable's reactives costs a lookup to read, and a line reads many."""

    base_style: Style
    look: tuple[object, ...]
    #: Lines this table may draw itself: a row cursor, no fixed rows or columns, no labels.
    own_lines: bool
    cursor_row: int
    hover_row: int
    zebra: bool
    label_width: int
    width: int
    columns: list[Column]
    widths: list[int]
    padding: int


class PlainCells(DataTable[Text]):
    """DataTable, drawing its plain one-line cells itself (module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        # Before DataTable's own: its watchers clear these caches.
        #: Cells drawn by `_plain_cell`, by what they are made of.
        self._plain_cells: dict[tuple[object, ...], list[list[Segment]]] = {}
        #: A cell's (pre, post, pre + post) styles by its place, and its text's styles.
        self._place_styles: dict[tuple[object, ...], tuple[Style, Style, Style]] = {}
        self._text_styles: dict[tuple[object, ...], Style] = {}
        #: What the lines of the paint under way share (`PlainTable.render_lines`).
        self._painting: Paint | None = None
        super().__init__(**kwargs)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # What the cursor, hover and zebra stripes look like may have changed.
        self._plain_cells.clear()
        self._place_styles.clear()
        self._text_styles.clear()

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

    def _paint(self, base_style: Style) -> Paint:
        columns = self.ordered_columns
        return Paint(
            base_style,
            self._cursor_look(),
            self.cursor_type == "row"
            and not self.fixed_rows
            and not self.fixed_columns
            and not (self._labelled_row_exists and self.show_row_labels),
            self.cursor_coordinate.row,
            self.hover_coordinate.row,
            self.zebra_stripes,
            self._row_label_column_width,
            self.size.width,
            columns,
            [column.get_render_width(self) for column in columns],
            self.cell_padding,
        )

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
        if type(cell) is not Text or cell.spans or cell.no_wrap or cell.overflow:
            return None
        paint = self._painting or self._paint(self.rich_style)
        return self._cell_of(
            paint, row_index, column_index, base_style, width, cursor, hover, cell.plain,
            cell.style, cell.justify,
        )  # fmt: skip

    def _cell_of(
        self,
        paint: Paint,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool,
        hover: bool,
        plain: str,
        text_style: Style | str,
        justify: str | None,
    ) -> list[list[Segment]] | None:
        """The segments of a cell of a plain `Text` (no spans, wrapping or
        overflow: the caller looked) showing `plain`; None: DataTable's to draw."""
        if not plain.isprintable() or cell_len(plain) != len(plain):
            return None
        if len(plain) > width - 2 * paint.padding or not isinstance(text_style, Style | str):
            return None
        if isinstance(text_style, str):
            if text_style:
                return None  # a style by name: Rich's parse
            text_style = Style.null()
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
            paint.look,
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
                paint.look,
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
        look: tuple[object, ...] | None = None,
    ) -> list[list[Segment]]:
        look = self._cursor_look() if look is None else look
        pre, post, plain_style = self._place(
            row_index, column_index, base_style, cursor, hover, look
        )
        key = (pre, post, text_style)
        styled = self._text_styles.get(key)
        if styled is None:
            if len(self._text_styles) >= PLACE_STYLES_KEPT:
                self._text_styles.clear()
            styled = self._text_styles[key] = pre + text_style + post
        pad = self.cell_padding
        return cell_segments(pad, width - 2 * pad, plain_style, styled, plain, justify)

    def _place(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        cursor: bool,
        hover: bool,
        look: tuple[object, ...],
    ) -> tuple[Style, Style, Style]:
        """A data cell's styles where it is, (pre, post, pre + post): `base + its
        row and column (the mouse's) + cursor/hover`, the post style; column
        -1: the fill right of the last column, (-, -, its style). Kept by place,
        not by text: a new window's cells are where the last one's were."""
        key = (row_index, column_index, base_style, cursor, hover, look)
        styles = self._place_styles.get(key)
        if styles is None:
            if len(self._place_styles) >= PLACE_STYLES_KEPT:
                self._place_styles.clear()
            if column_index < 0:
                extend, _ = self._cursor_styles(cursor, hover, css_priorities=False)
                meta = {"row": row_index, "column": 0, "out_of_bounds": True}
                fill = base_style + extend + Style.from_meta(meta)
                styles = (fill, fill, fill)
            else:
                component, post = self._cursor_styles(cursor, hover, css_priorities=True)
                meta = {"row": row_index, "column": column_index}
                pre = base_style + Style.from_meta(meta) + component
                styles = (pre, post, pre + post)
            self._place_styles[key] = styles
        return styles
