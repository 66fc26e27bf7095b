"""The rows of a line table (line_table.py) and their drawing, on Textual's
Line API: a `ScrollView` whose `render_line` draws only the lines on screen
(line_paint.py draws them), its scrollbars drawn only when they change
(textual_private.py's `SteadyScrollbars`). It looks as Textual's
`DataTable` with a row cursor and zebra stripes does (the same CSS), and
knows only Textual's public API besides: rows are held here as lists of
`Text`, columns as `Column`s, and what a line depends on is in the line
itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.strip import Strip

from reclaim_tui.tui.widgets.kept import Kept
from reclaim_tui.tui.widgets.line_paint import (
    LINES_KEPT,
    Look,
    Styles,
    cell_part,
    draw_line,
    text_width,
)
from reclaim_tui.tui.widgets.textual_private import SteadyScrollbars

__all__ = ["Column", "LineRows"]

#: A line drawn, with what its key names by identity (`LineRows._line`).
_Drawn = tuple[Strip, tuple[Text, ...], Look, Style]

#: A cell's text (its width is measured on it).
_PLAIN = attrgetter("plain")


@dataclass
class Column:
    """A column: fixed `width`, or (auto) as wide as its widest cell or label."""

    key: str
    label: Text
    width: int = 0
    content_width: int = 0
    auto_width: bool = True

    def render_width(self, padding: int) -> int:
        return 2 * padding + (self.content_width if self.auto_width else self.width)


class LineRows(SteadyScrollbars, can_focus=True):
    """The rows, the columns and their drawing (module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "linetable--header",
        "linetable--even-row",
        "linetable--odd-row",
        "linetable--cursor",
        "linetable--hover",
        "linetable--header-hover",
        "linetable--header-cursor",
    }
    # DataTable's own look, for the parts this table has.
    DEFAULT_CSS = """
    LineRows {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus {
            background-tint: $foreground 5%;
            & > .linetable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .linetable--header { background-tint: $foreground 5%; }
        }
        &:dark > .linetable--even-row { background: $surface-darken-1 40%; }
        & > .linetable--header { text-style: bold; background: $panel; color: $foreground; }
        &:ansi > .linetable--header { background: ansi_bright_blue; color: ansi_default; }
        & > .linetable--odd-row { }
        & > .linetable--even-row { background: $surface-lighten-1 50%; }
        & > .linetable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .linetable--header-cursor { background: $accent-darken-1; color: $foreground; }
        & > .linetable--header-hover { background: $accent 30%; }
        & > .linetable--hover { background: $block-hover-background; }
    }
    """

    def __init__(self, *, zebra_stripes: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.zebra_stripes = zebra_stripes
        self.cell_padding = 1
        self.header_height = 1
        self.columns: dict[str, Column] = {}
        self._keys: list[str] = []
        self._where: dict[str, int] = {}
        self._cells: list[list[Text]] = []
        self._cursor = 0
        #: The row under the mouse (-1: the header), and whether it is shown.
        self._hover: int | None = None
        #: The lines drawn, by what they are made of (`_line`).
        self._lines: Kept[tuple[object, ...], _Drawn] = Kept(LINES_KEPT)
        self._look: Look | None = None
        self._styles = Styles()
        #: During a paint: the widget's style and the columns' widths.
        self._paint_base: Style | None = None
        self._paint_widths: tuple[int, ...] = ()
        #: The widget's style as last painted with (its equal is painted with this one).
        self._base_kept: Style | None = None
        #: The rows or columns changed since the cursor last scrolled into view.
        self.rows_changed = False

    # -- what it holds -----------------------------------------------------------------
    @property
    def ordered_columns(self) -> list[Column]:
        return list(self.columns.values())

    @property
    def row_count(self) -> int:
        return len(self._keys)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    def has_row(self, key: str) -> bool:
        return key in self._where

    def row_keys(self) -> list[str]:
        return list(self._keys)

    def get_row(self, key: str) -> list[Text]:
        return list(self._cells[self._where[key]])

    def get_row_at(self, index: int) -> list[Text]:
        return list(self._cells[index])

    def get_cell(self, row_key: str, column_key: str) -> Text:
        return self._cells[self._where[row_key]][list(self.columns).index(column_key)]

    def add_column(self, label: str | Text, *, key: str, width: int | None = None) -> None:
        text = Text.from_markup(label) if isinstance(label, str) else label
        auto = width is None
        self.columns[key] = Column(key, text, width or 0, text.cell_len, auto)
        for cells in self._cells:
            cells.append(Text())
        self._resized()

    def clear(self, columns: bool = False) -> None:
        """Remove the rows (and the columns); the cursor and the scroll go to the top."""
        self._keys, self._where, self._cells = [], {}, []
        if columns:
            self.columns = {}
        self._cursor, self._hover = 0, None
        self._resized()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def replace_rows(self, rows: Iterable[tuple[str, list[Text]]]) -> None:
        """`clear()` then `add_rows(rows)`, with the table's size set once:
        each new size lays the whole screen out again."""
        self._keys, self._where, self._cells = [], {}, []
        self._cursor, self._hover = 0, None
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.add_rows(rows)

    def add_rows(self, rows: Iterable[tuple[str, list[Text]]]) -> None:
        """Add rows of (key, cells in the columns' order); a row's first
        appearance under the cursor is announced (`RowHighlighted`)."""
        was_empty, columns = not self._keys, self.ordered_columns
        count, where, added = len(columns), self._where, len(self._cells)
        for key, cells in rows:
            if key in where:
                raise ValueError(f"The row key {key!r} already exists.")
            cells = list(cells)
            if len(cells) != count:
                if len(cells) > count:
                    raise ValueError("More values provided than there are columns.")
                cells += [Text() for _ in range(count - len(cells))]
            where[key] = len(self._keys)
            self._keys.append(key)
            self._cells.append(cells)
        self._fit(columns, self._cells[added:])
        self._resized()
        if was_empty and self._keys:
            self._announce(self._cursor)

    @staticmethod
    def _fit(columns: list[Column], rows: list[list[Text]]) -> None:
        """Widen the auto columns to the widest of `rows`' cells.

        A window's cells are mostly shared texts (table_cells.py): a column's
        are told apart by identity (every cell is held by a row) and each is
        measured once, a printable ASCII one by its length (`text_width`).
        The rows are taken a column at a time: no line of Python runs for
        each cell, only for each distinct one."""
        if not rows:
            return
        for column, cells in zip(columns, zip(*rows, strict=True), strict=True):
            if column.auto_width:
                distinct = dict(zip(map(id, cells), cells, strict=True)).values()
                widest = max(map(text_width, map(_PLAIN, distinct)))
                column.content_width = max(column.content_width, widest)

    def update_cell(self, row_key: str, column_key: str, value: Text) -> None:
        index = self._where[row_key]
        column = self.columns[column_key]
        self._cells[index][list(self.columns).index(column_key)] = value
        width = text_width(value.plain)
        if column.auto_width and width > column.content_width:
            column.content_width = width
            self._resized()
        else:
            self._refresh_row(index)

    def _resized(self) -> None:
        """The columns' widths or the rows changed: the whole table is drawn anew.

        A new virtual size lays the whole screen out again: a table narrower
        than the screen takes the width it always has room for (the screen's
        less a vertical scrollbar), so that a new window whose columns are a
        little wider or narrower changes nothing but its lines."""
        width = sum(column.render_width(self.cell_padding) for column in self.columns.values())
        room = self.size.width - self.styles.scrollbar_size_vertical
        self.virtual_size = Size(max(width, room), len(self._keys) + self.header_height)
        self.rows_changed = True
        # Every line is drawn again. Textual's refresh of the whole widget
        # would also empty its cache of the lines drawn, freeing the old
        # window's lines at once, in the key that changed the window; a
        # refresh of the widget's region (as Textual's own scrolling does)
        # draws every line again, each old line freed as its new one
        # replaces it, when the frame is drawn.
        self.refresh(self.size.region)

    def on_resize(self) -> None:
        self._resized()  # the width a narrow table takes follows the screen's

    def _refresh_row(self, row: int) -> None:
        if row < 0:  # the header, which does not scroll
            self.refresh(Region(0, 0, self.size.width, self.header_height))
        else:
            self.refresh_line(row + self.header_height)

    def _announce(self, row: int) -> None:
        """The rows under the cursor changed: said by the table (line_table.py)."""

    def _hover_off(self) -> None:
        self._set_hover(None)

    def _set_hover(self, row: int | None) -> None:
        if row != self._hover:
            for old_or_new in (self._hover, row):
                if old_or_new is not None:
                    self._refresh_row(old_or_new)
            self._hover = row

    # -- drawing -----------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()
        self._look = None
        self.refresh()

    def on_focus(self) -> None:
        self._look = None  # the cursor's colours follow the focus

    def on_blur(self) -> None:
        self._look = None

    def _read_look(self) -> Look:
        component = self.get_component_rich_style
        styles = self.get_component_styles
        return Look(
            styles("linetable--header").rich_style,
            styles("linetable--even-row").rich_style,
            styles("linetable--odd-row").rich_style,
            component("linetable--cursor"),
            component("linetable--hover"),
            component("linetable--header-hover"),
            component("linetable--header-cursor"),
            self.zebra_stripes,
            self.cell_padding,
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        # The widget's style is read once a paint, not once a line: it walks
        # the ancestors. Textual makes it anew after each refresh: an equal
        # one is taken for the one kept, so lines keyed by it are found.
        base = self.rich_style
        if base != self._base_kept:
            self._base_kept = base
        self._paint_base = self._base_kept
        self._paint_widths = self._widths()
        try:
            return super().render_lines(crop)
        finally:
            self._paint_base = None

    def _widths(self) -> tuple[int, ...]:
        return tuple(column.render_width(self.cell_padding) for column in self.columns.values())

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base_style = self._paint_base
        widths = self._paint_widths
        if base_style is None:  # outside a paint
            base_style, widths = self.rich_style, self._widths()
        if y >= self.header_height:
            row = y - self.header_height + int(self.scroll_y)
            if row >= len(self._keys):
                return Strip.blank(width, base_style)
            cells = tuple(self._cells[row])
        else:
            row, cells = -1, tuple(column.label for column in self.columns.values())
        look = self._look
        if look is None:
            look = self._look = self._read_look()
            self._styles = Styles()
        return self._line(look, row, cells, widths, base_style, width)

    def _line(
        self,
        look: Look,
        row: int,
        cells: tuple[Text, ...],
        widths: tuple[int, ...],
        base_style: Style,
        width: int,
    ) -> Strip:
        """The line of `cells`, kept by what it is made of: the cells, the
        look and the widget's style by their identities (a cell's `Text` is
        never changed in place: a changed cell is another `Text`), and the
        entry holds them, so that no other object takes an identity its key
        names while it is kept."""
        cursor = row == self._cursor and row >= 0
        hover = row == self._hover
        x = int(self.scroll_x)
        key = (row, cursor, hover, x, width, widths, id(look), id(base_style), *map(id, cells))
        drawn = self._lines.get(key)
        if drawn is None:
            parts = [cell_part(cell, w) for cell, w in zip(cells, widths, strict=True)]
            strip = draw_line(look, self._styles, row, parts, cursor, hover, base_style, x, width)
            drawn = self._lines.keep(key, (strip, cells, look, base_style))
        return drawn[0]
