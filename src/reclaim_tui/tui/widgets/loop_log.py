"""What the reclaim loop did: one line per pass, errors and operator actions."""

from __future__ import annotations

from collections import deque

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip

from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.tui.format import clock_time, shorten_error
from reclaim_tui.tui.widgets.textual_private import SteadyScrollbars

__all__ = ["LoopLog"]

MAX_LINES = 500


class LoopLog(SteadyScrollbars):
    """The newest lines at the bottom, scrolled to while the log is at its end.

    A line is wrapped at the log's width when written (while the log has no
    width, under the full-screen detail, when it gets one), and every line
    again when the width changes. A new line changes the scrollable height
    only: the scrollbar and the lines are redrawn, and the screen is laid
    out again only when the scrollbar comes or goes (a layout of the whole
    screen at every line was most of a busy loop's cost to the keys); a
    layout of the screen for anything else leaves the scrollbar as it is
    (textual_private.py's `SteadyScrollbars`)."""

    DEFAULT_CSS = """
    LoopLog { border: round $panel-lighten-2; height: 1fr; background: $surface;
              color: $foreground; overflow-y: auto; overflow-x: hidden;
              border-title-color: $foreground-muted; border-title-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "loop log"
        self.can_focus = False
        self._entries: deque[Text] = deque(maxlen=MAX_LINES)
        #: Each entry's screen lines at `_width` (none while the log has no width).
        self._wrapped: deque[int] = deque(maxlen=MAX_LINES)
        self._lines: list[Strip] = []
        self._width = 0
        #: (first, count) of the quiet passes in a row so far; None after a busy one.
        self._quiet: tuple[float, int] | None = None

    @property
    def lines(self) -> list[Strip]:
        """The lines, wrapped at the log's width."""
        return self._lines

    def tick(self, report: PassReport, seconds: float, at: float) -> None:
        """A line for the pass and its first errors. Quiet passes (every 2 s)
        would push the errors out of view: after the first, they are counted,
        and said in one line when a pass does something again."""
        summary = report.summary()
        if summary == "idle":
            if self._quiet is None:
                self.line(at, f"pass {seconds:.2f}s: idle (the next quiet ones are counted)")
                self._quiet = (at, 0)
            self._quiet = (self._quiet[0], self._quiet[1] + 1)
            return
        if self._quiet is not None and self._quiet[1] > 1:
            since, count = self._quiet
            self.line(at, f"{count} quiet passes since {clock_time(since)}")
        self._quiet = None
        self.line(at, f"pass {seconds:.2f}s: {summary}")
        for idem, message in report.errors[:5]:
            self.line(at, f"  {idem[:12]}: {shorten_error(message, 160)}", error=True)
        if len(report.errors) > 5:
            self.line(at, f"  … {len(report.errors) - 5} more errors in their rows", error=True)

    def line(self, at: float, text: str, *, error: bool = False) -> None:
        # The lines are Rich text, so the theme's colour is looked up here.
        style = Style.parse(self.app.theme_variables.get("error", "")) if error else Style()
        entry = Text.assemble((clock_time(at), "dim"), " ", (text, style))
        entry.expand_tabs()
        if len(self._entries) == MAX_LINES:
            del self._lines[: self._wrapped[0]]
        self._entries.append(entry)
        strips = self._wrap(entry)
        self._wrapped.append(len(strips))
        self._lines += strips
        self._resized()

    def _wrap(self, entry: Text) -> list[Strip]:
        if not self._width:
            return []
        console = self.app.console
        width = min(self._width, max(_widths(entry)))
        options = console.options.update_width(max(width, 1))
        lines = Segment.split_lines(console.render(entry, options))
        strips = Strip.from_lines(list(lines))
        return [strip.adjust_cell_length(width) for strip in strips]

    def _resized(self) -> None:
        """Scroll size for the lines, scrolled to the newest, and a redraw."""
        size = Size(self._width, len(self._lines))
        height = self.container_size.height
        if not height or (size.height > height) != self.show_vertical_scrollbar:
            self.virtual_size = size  # the scrollbar comes or goes: a layout
        else:
            self.set_reactive(LoopLog.virtual_size, size)
            bar = self.vertical_scrollbar
            bar.window_virtual_size, bar.window_size = size.height, height
        self.scroll_to(y=max(0, size.height - height), animate=False, immediate=True)
        self.refresh()

    def watch_show_vertical_scrollbar(self) -> None:
        # The scrollbar takes its width from the lines' after the layout it asks for.
        self.call_after_refresh(self.on_resize)

    def on_resize(self) -> None:
        """The lines wrapped again at a new width."""
        width = self.scrollable_content_region.width
        if width != self._width:
            self._width = width
            wrapped = [self._wrap(entry) for entry in self._entries]
            self._wrapped = deque((len(strips) for strips in wrapped), maxlen=MAX_LINES)
            self._lines = [strip for strips in wrapped for strip in strips]
            self._resized()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = y + self.scroll_offset.y
        style = self.rich_style
        if not 0 <= index < len(self._lines):
            return Strip.blank(width, style)
        return self._lines[index].crop_extend(0, width, style).apply_style(style)


def _widths(entry: Text) -> list[int]:
    """The cell widths of the entry's lines."""
    return [cell_len(line) for line in entry.plain.split("\n")]
