"""The console's only uses of Textual's private names, kept here and
checked by tests/tui/test_textual_private.py, which fails when a Textual
release changes any of them.

- The footer's keys (`FooterKey`) are not exported by `textual.widgets`:
  the console's footer (footer.py) measures them to fit the width, and
  Textual offers no public way to build a footer's keys other than its own.
- Whether a footer has read its screen's bindings yet (`bindings_ready`):
  before that it composes nothing, and the console's footer must not take
  that empty footer for what it shows.
- The tabs' underline (`StillTabs`): Textual slides it to a new tab,
  a screen drawn again at every frame for a moment, each frame taking the
  UI thread from the new tab's window. The only public switch is the whole
  app's animation level, which would also still the console's other
  animations (the loading indicators among them).
- A key held back during a paste burst (typeahead.py) is handed to the
  focused widget as Textual hands it keys (`forward_key`): marked as
  forwarded, or it would bubble back to the app and be taken for a new key.
  Nothing public marks an event forwarded.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Footer, Tabs
from textual.widgets._footer import FooterKey

__all__ = ["FooterKey", "StillTabs", "bindings_ready", "forward_key"]


def bindings_ready(footer: Footer) -> bool:
    """The footer has read its screen's bindings (it composes nothing before)."""
    return bool(footer._bindings_ready)


def forward_key(widget: Widget, key: events.Key) -> None:
    """Hand `key` to `widget` as the app hands a focused widget its keys."""
    widget._forward_event(key)


class StillTabs(Tabs):
    """Tabs whose underline moves to the new tab at once (module docstring)."""

    def _highlight_active(self, animate: bool = True) -> None:
        super()._highlight_active(animate=False)
