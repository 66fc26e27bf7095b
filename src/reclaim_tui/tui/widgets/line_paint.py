"""How a line table (line_table.py) draws one screen line: its cells as
DataTable draws them, built directly from one-line `Text`s.

A cell is a padding space, its text (cropped to the column, or filled to
it: before the text when right-justified, after it otherwise) and a padding
space. Each part is styled `row style + the cell's place (its row and
column, read back by the mouse) + the cursor's or hover's style`, the text
with its own style on top, and the cursor's colours again after it (so a
coloured status stays readable under the cursor, as in DataTable). Right of
the last column the row's style fills the width.

Lines are kept by what they are made of (the cells' texts and styles, the
cursor, the hover, the width, the scroll): a moved cursor draws two lines
again, a refresh of the ages only the rows whose ages changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from reclaim_tui.tui.widgets.kept import Kept

__all__ = [
    "LINES_KEPT",
    "STYLES_KEPT",
    "CellPart",
    "Look",
    "Styles",
    "cell_part",
    "draw_line",
    "text_width",
]

#: Lines kept (the oldest dropped first): five 48-row screens.
LINES_KEPT = 256
#: Styles kept by place and by text style (the oldest dropped first): a
#: 100-row window's, cursor and hover included.
STYLES_KEPT = 4096

#: One cell as drawn: its text, the text's style, its justification, its width with padding.
CellPart = tuple[str, Style, str, int]


def text_width(plain: str) -> int:
    """The cells `plain` takes on screen: its length when it is printable
    ASCII (one cell a character, as most of a table's cells are), else as
    Rich measures it."""
    return len(plain) if plain.isascii() and plain.isprintable() else cell_len(plain)


def cell_part(cell: Text, width: int) -> CellPart:
    """What a cell's drawing depends on (a line is kept by these)."""
    style = cell.style
    if isinstance(style, str):
        style = Style.parse(style) if style else Style.null()
    return (cell.plain, style, cell.justify or "left", width)


class Look(NamedTuple):
    """The styles a paint draws with, read once a paint from the CSS: a row's
    (header, even, odd), and the cursor's and hover's (each as DataTable
    builds them: the component's style, and the colours put after the text)."""

    header: Style
    even: Style
    odd: Style
    cursor: Style
    hover: Style
    header_hover: Style
    header_cursor: Style
    zebra: bool
    padding: int


def _component(look: Look, header: bool, cursor: bool, hover: bool) -> Style:
    style = Style()
    if hover:
        style += look.hover
        if header:
            style += look.header_hover
    if cursor:
        style += look.cursor
        if header:
            style += look.header_cursor
    return style


class Styles:
    """A cell's styles by its place, kept across windows: a new window's
    cells sit where the last one's did (their row and column are in their
    styles, for the mouse), and only their texts are new. Made afresh for a
    new look (the table drops it with the look)."""

    def __init__(self) -> None:
        self.places: Kept[tuple[object, ...], tuple[Style, Style]] = Kept(STYLES_KEPT)
        #: (pre, text style, post) by their identities -> the same three, the
        #: padding's style and the text's. A line draws with the same style
        #: objects as the lines before it: looking them up by value hashed
        #: three styles (a Python call each) twice a cell. An entry holds its
        #: three styles, so no other style can take their identities while
        #: it is kept.
        self.texts: Kept[tuple[int, int, int], tuple[Style, Style, Style, Style, Style]] = Kept(
            STYLES_KEPT
        )
        #: A line's places, (pre, post) of each column and the fill's style,
        #: by its row, its row style's identity, the cursor, the hover and
        #: the columns; an entry holds its row style (as `texts` does).
        self.lines: Kept[tuple[object, ...], tuple[list[tuple[Style, Style]], Style, Style]] = Kept(
            LINES_KEPT
        )
        #: A cell's segments by its text, its text style's identity, its
        #: justification and width, and its place's styles' identities: a
        #: cell drawn again where it was drawn before (a line whose age
        #: moved, a status in the same place in the next window) is not
        #: built again. An entry holds the styles its key names.
        self.cells: Kept[tuple[object, ...], tuple[list[Segment], Style, Style, Style]] = Kept(
            STYLES_KEPT
        )

    def place(
        self, row: int, column: int, row_style: Style, cursor: bool, hover: bool, look: Look
    ) -> tuple[Style, Style]:
        """(pre, post) of the cell at (row, column); column -1: (fill, -) right of the last."""
        key = (row, column, row_style, cursor, hover)
        styles = self.places.get(key)
        if styles is None:
            component = _component(look, row < 0, cursor, hover)
            if column < 0:
                meta = {"row": row, "column": 0, "out_of_bounds": True}
                fill = row_style + component + Style.from_meta(meta)
                styles = (fill, fill)
            else:
                post = Style.from_color(component.color) + Style.from_color(
                    bgcolor=component.bgcolor
                )
                pre = row_style + Style.from_meta({"row": row, "column": column}) + component
                styles = (pre, post)
            self.places.keep(key, styles)
        return styles

    def line(
        self, row: int, row_style: Style, cursor: bool, hover: bool, look: Look, columns: int
    ) -> tuple[list[tuple[Style, Style]], Style]:
        """(pre, post) of each of the row's `columns` cells, and the fill's style."""
        key = (row, id(row_style), cursor, hover, columns)
        kept = self.lines.get(key)
        if kept is None:
            places = [self.place(row, c, row_style, cursor, hover, look) for c in range(columns)]
            fill, _ = self.place(row, -1, row_style, cursor, hover, look)
            kept = self.lines.keep(key, (places, fill, row_style))
        return kept[0], kept[1]

    def cell(self, part: CellPart, pre: Style, post: Style, pad: int) -> list[Segment]:
        """The segments of a cell drawn `part` at the place of `pre` and `post`."""
        plain, text_style, justify, width = part
        key = (plain, id(text_style), justify, width, id(pre), id(post), pad)
        kept = self.cells.get(key)
        if kept is None:
            segments = _cell_segments(part, pre, post, self, pad)
            kept = self.cells.keep(key, (segments, text_style, pre, post))
        return kept[0]

    def text(self, pre: Style, text_style: Style, post: Style) -> tuple[Style, Style]:
        """(padding, text): the styles of a cell's padding and of its text."""
        key = (id(pre), id(text_style), id(post))
        kept = self.texts.get(key)
        if kept is None:
            padding, text = pre + post, pre + text_style + post
            kept = self.texts.keep(key, (pre, text_style, post, padding, text))
        return kept[3], kept[4]


def _cell_segments(
    part: CellPart, pre: Style, post: Style, styles: Styles, pad: int
) -> list[Segment]:
    """The cell's segments, neighbours of one style already joined (the
    line needs no pass to join them): its text in the text's style, the
    padding and the fill around it in the cell's."""
    plain, text_style, justify, width = part
    plain_style, styled = styles.text(pre, text_style, post)
    room = max(0, width - 2 * pad)
    plain_width = text_width(plain)
    if plain_width > room:
        plain, plain_width = set_cell_size(plain, room), room
    fill = room - plain_width
    if justify == "right":
        before, after = fill, 0
    elif justify == "center":
        before = fill // 2
        after = fill - before
    else:
        before, after = 0, fill
    left, right = " " * (pad + before), " " * (after + pad)
    if styled is plain_style or styled == plain_style or not plain:
        return [Segment(left + plain + right, plain_style)]
    if justify == "right":  # the fill before the text takes the text's style
        left, plain = " " * pad, " " * before + plain
    line = [Segment(left, plain_style)] if left else []
    line.append(Segment(plain, styled))
    if right:
        line.append(Segment(right, plain_style))
    return line


def draw_line(
    look: Look,
    styles: Styles,
    row: int,
    parts: Sequence[CellPart],
    cursor: bool,
    hover: bool,
    base_style: Style,
    x: int,
    width: int,
) -> Strip:
    """Row `row` (-1: the header) of `parts`, scrolled `x` cells sideways, `width` wide."""
    header = row < 0
    if header:
        row_style = look.header
    elif look.zebra:
        row_style = look.odd if row % 2 else look.even
    else:
        row_style = base_style
    segments: list[Segment] = []
    table_width = 0
    places, fill = styles.line(row, row_style, cursor, hover, look, len(parts))
    cell, pad = styles.cell, look.padding
    for part, (pre, post) in zip(parts, places, strict=True):
        segments.extend(cell(part, pre, post, pad))
        table_width += part[3]
    if width > table_width:
        segments.append(Segment(" " * (width - table_width), fill))
    # Neighbouring cells differ in style (each says its column, for the
    # mouse): the segments are as few as they can be, with no pass to join them.
    # Each cell is exactly its column's width: the strip's length is known,
    # and a line as wide as the screen is neither measured nor cut again.
    strip = Strip(segments, max(width, table_width))
    return strip.crop(x, x + width).adjust_cell_length(width, base_style)
