"""The detail pane's text, drawn on Textual's Line API: only the lines on
screen are wrapped and styled.

A `Static` wraps and styles its whole text at each update, and the pane
shows about a screen of a detail whose input and timeline run much longer.
This body counts its lines at a width (a line as wide as the body or less
is one line, only a longer one is wrapped, its styles left out), and draws
a line when the pane shows it: the text's line it belongs to is wrapped and
styled as a `Static` does it, and kept until the text, the width or the
styles change. While a text selection is in the body, it is drawn whole, as
a `Static` draws it (the selection's rows and columns are the whole text's).
"""

from __future__ import annotations

from bisect import bisect_right

from rich.cells import cell_len
from textual.content import Content
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.visual import Visual
from textual.widget import Widget

__all__ = ["DetailBody"]


class DetailBody(Widget):
    """One text, drawn a screen line at a time (module docstring)."""

    DEFAULT_CSS = """
    DetailBody { height: auto; }
    """

    def __init__(self, content: Content, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = content
        #: The text's lines (split at its newlines, tabs expanded).
        self._lines: list[Content] = []
        #: (width, first screen line of each text line, then the total).
        self._starts: tuple[int, list[int]] = (0, [0])
        #: Each text line's screen lines at the width counted, once drawn.
        self._drawn: dict[int, list[Strip]] = {}
        #: The whole text drawn under a selection: (width, selection, lines).
        self._selected: tuple[int, Selection, list[Strip]] | None = None
        self._split()

    @property
    def content(self) -> Content:
        """The text shown."""
        return self._content

    def render(self) -> Content:
        return self._content

    def update(self, content: Content, *, layout: bool = True) -> None:
        """Show `content`; `layout`: its height may differ from the last."""
        self._content = content
        self._split()
        self.refresh(layout=layout)

    def blank_below(self, count: int) -> None:
        """Add `count` blank lines below the text (a body that keeps its height)."""
        self._content += "\n" * count
        self._lines += [Content("")] * count
        self._starts = (0, [0])

    def height_at(self, width: int) -> int:
        """The screen lines the text takes at `width`."""
        return self._count(width)[-1]

    def _split(self) -> None:
        self._lines = [
            line.expand_tabs(8) if "\t" in line.plain else line
            for line in self._content.split("\n", allow_blank=True)
        ]
        self._starts = (0, [0])
        self._forget()

    def _forget(self) -> None:
        self._drawn.clear()
        self._selected = None

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget()

    def selection_updated(self, selection: Selection | None) -> None:
        self._selected = None
        super().selection_updated(selection)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.height_at(width)

    def _count(self, width: int) -> list[int]:
        """The first screen line of each text line at `width`, then the total."""
        if width == self._starts[0] and len(self._starts[1]) == len(self._lines) + 1:
            return self._starts[1]
        if width != self._starts[0]:
            self._drawn.clear()
        starts, at = [0], 0
        for line in self._lines:
            plain = line.plain
            if width <= 0 or cell_len(plain) <= width:
                at += 1
            else:
                at += len(line.without_spans.wrap(width))
            starts.append(at)
        self._starts = (width, starts)
        return starts

    def render_lines(self, crop: Region) -> list[Strip]:
        # The text lines on screen not drawn yet, drawn in one go.
        width = self.size.width
        if width > 0 and self.text_selection is None:
            self._draw(crop.y, crop.bottom, width)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        blank = Strip.blank(width, self.visual_style.rich_style)
        if width <= 0:
            return blank
        selection = self.text_selection
        if selection is not None:
            return self._selected_line(y, width, selection, blank)
        starts = self._count(width)
        if not 0 <= y < starts[-1]:
            return blank
        index = bisect_right(starts, y) - 1
        if index not in self._drawn:
            self._draw(y, y + 1, width)
        strips = self._drawn[index]
        part = y - starts[index]
        return strips[part] if part < len(strips) else blank

    def _draw(self, top: int, bottom: int, width: int) -> None:
        """The text lines that screen lines `top` to `bottom` show, those not
        drawn yet, wrapped and styled at `width` as a `Static` draws them,
        with the place of each part in the whole text (the mouse reads it
        to start a selection)."""
        starts = self._count(width)
        top, bottom = max(0, top), min(bottom, starts[-1])
        if top >= bottom:
            return
        first = bisect_right(starts, top) - 1
        last = bisect_right(starts, bottom - 1) - 1
        missing = [index for index in range(first, last + 1) if index not in self._drawn]
        if not missing:
            return
        first, last = missing[0], missing[-1]
        text = Content("\n").join(self._lines[first : last + 1])
        style = self.visual_style
        strips = Visual.to_strips(self, text, width, None, style, apply_selection=False)
        at = 0
        for index in range(first, last + 1):
            count = starts[index + 1] - starts[index]
            part = strips[at : at + count]
            at += count
            self._drawn[index] = [_placed(s, index) for s in part] if first else part

    def _selected_line(self, y: int, width: int, selection: Selection, blank: Strip) -> Strip:
        kept = self._selected
        if kept is None or kept[0] != width or kept[1] != selection:
            lines = Visual.to_strips(self, self._content, width, None, self.visual_style)
            kept = self._selected = (width, selection, lines)
        lines = kept[2]
        return lines[y] if 0 <= y < len(lines) else blank


def _placed(strip: Strip, row: int) -> Strip:
    """`strip` (a part of a text line drawn apart from the lines above it)
    at text row `row`."""
    first = next(iter(strip), None)
    if first is None:
        return strip
    meta = first.style.meta if first.style is not None else {}
    x = meta.get("offset", (0, 0))[0]
    return strip.apply_offsets(x, row)
