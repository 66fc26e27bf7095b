"""The footer, fitted to the width, never running under the palette's key.
In the order tried until it fits: every key with its title; the keys listed
"where they fit" (`WHERE_THEY_FIT`: f, v, $, S, :, enter) by
their key only, then fewer of them (the others keep their titles); then
every key but a few (keymap's `titled`) by its key only, with as many of
the where-they-fit keys as fit.

Textual rebuilds a footer on every change of the screen's bindings (a
focus move, any `refresh_bindings`), most of which change nothing the
footer shows: three rebuilds before the first page, each costly on the UI
thread. This one rebuilds only when what it shows differs."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Footer

from reclaim_tui.tui.keymap import TITLED
from reclaim_tui.tui.widgets.textual_private import FooterKey, bindings_ready

__all__ = ["WHERE_THEY_FIT", "ConsoleFooter"]

#: Actions the footer shows where they fit (by their key only), the first kept longest:
#: f, v, $, S, :, enter (the table's own enter opens the detail).
WHERE_THEY_FIT = ("follow", "raw_json", "costs", "charts", "command_line", "select_cursor")


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
        self._shown: tuple[Any, ...] | None = None

    async def recompose(self) -> None:
        shown = self._what_it_shows()
        if shown == self._shown:
            return
        self._shown = shown
        await super().recompose()

    def _what_it_shows(self) -> tuple[Any, ...]:
        """Everything `compose` reads: the width, the shown bindings (key,
        action, title, group, enabled, tooltip) and the palette's key."""
        if not bindings_ready(self) or not self.is_attached:
            return ()
        bindings = tuple(
            (b.key, b.action, b.description, b.group, b.key_display, enabled, tooltip)
            for (_, b, enabled, tooltip) in self.screen.active_bindings.values()
            if b.show or b.action == "command_palette"
        )
        return (self.app.size.width, self.compact, self.show_command_palette, bindings)

    def compose(self) -> ComposeResult:
        # The terminal's width: the footer spans it, and it is known before
        # the footer's first layout.
        self._width = self.app.size.width
        widgets = list(super().compose())
        keys = [w for w in widgets if isinstance(w, FooterKey)]
        extra = sorted(
            (k for k in keys if k.action in WHERE_THEY_FIT),
            key=lambda k: WHERE_THEY_FIT.index(k.action),
        )
        plain = [k for k in keys if k.action not in TITLED and not k.has_class("-command-palette")]
        if self._fits(widgets):
            yield from widgets
            return
        for key in extra:
            key.description = ""
        for untitled in ((), plain):
            for key in untitled:
                key.description = ""
            for kept in range(len(extra), -1, -1):
                left_out = set(extra[kept:])
                shown = [w for w in widgets if w not in left_out]
                if self._fits(shown):
                    yield from shown
                    return
        yield from [w for w in widgets if w not in set(extra)]

    def _fits(self, widgets: list[Widget]) -> bool:
        return sum(_cells(w) for w in widgets) <= self._width

    def on_resize(self) -> None:
        if self.app.size.width != self._width:
            self.call_after_refresh(self.recompose)
