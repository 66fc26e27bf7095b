"""The footer, fitted to the width: a narrow one keeps the titles of a few
keys (keymap's `titled`) and shows the others' keys only, instead of letting
them run under the palette's key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from reclaim_tui.tui.keymap import TITLED

__all__ = ["ConsoleFooter"]


def _cells(widget: Widget) -> int:
    """Cells a compact footer key takes: key, space, title, margin."""
    if not isinstance(widget, FooterKey):
        return 0
    title = f" {widget.description}" if widget.description else ""
    return len(widget.key_display) + len(title) + 1


class ConsoleFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True)
        self._width = 0

    def compose(self) -> ComposeResult:
        # The terminal's width: the footer spans it, and it is known before
        # the footer's first layout.
        self._width = self.app.size.width
        widgets = list(super().compose())
        if sum(_cells(w) for w in widgets) > self._width:
            for widget in widgets:
                if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                    if widget.action not in TITLED:
                        widget.description = ""
        yield from widgets

    def on_resize(self) -> None:
        if self.app.size.width != self._width:
            self.call_after_refresh(self.recompose)
