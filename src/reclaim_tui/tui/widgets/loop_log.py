"""What the reclaim loop did: one line per pass, errors and operator actions."""

from __future__ import annotations

from collections import deque

from rich.style import Style
from rich.text import Text
from textual.events import Resize
from textual.widgets import RichLog

from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.tui.format import clock_time, shorten_error

__all__ = ["LoopLog"]

MAX_LINES = 500


class LoopLog(RichLog):
    """RichLog wraps a line once, at the width it has when the line is written
    (20, its `min_width`, while the full-screen detail hides it). It keeps its
    lines and wraps them again whenever its width changes."""

    DEFAULT_CSS = """
    LoopLog { border: round $panel-lighten-2; height: 1fr; background: $surface;
              overflow-y: auto; overflow-x: hidden;
              border-title-color: $foreground-muted; border-title-style: bold; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        # min_width: RichLog renders every line at least that wide (78 by
        # default) and the narrow pane clipped the rest instead of wrapping.
        super().__init__(max_lines=MAX_LINES, min_width=20, wrap=True, markup=False, id=id)
        self.border_title = "loop log"
        self.can_focus = False
        self._entries: deque[Text] = deque(maxlen=MAX_LINES)
        self._wrapped_at = 0
        #: A resize has given the log a width: RichLog wraps what was written
        #: before that itself, at that width.
        self._width_seen = False
        #: (first, count) of the quiet passes in a row so far; None after a busy one.
        self._quiet: tuple[float, int] | None = None

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
        # RichLog renders Rich text, so the theme's colour is looked up here.
        style = Style.parse(self.app.theme_variables.get("error", "")) if error else Style()
        entry = Text.assemble((clock_time(at), "dim"), " ", (text, style))
        self._entries.append(entry)
        self._write(entry)

    def _write(self, entry: Text) -> None:
        self._wrapped_at = self.scrollable_content_region.width
        self.write(entry)

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if self._width_seen and width and width != self._wrapped_at:
            self.clear()
            for entry in self._entries:
                self._write(entry)
        self._width_seen = self._width_seen or bool(event.size.width)
