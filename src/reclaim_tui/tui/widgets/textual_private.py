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
  animations (the loading indicators among them). A switch of the active
  tab gives the two tabs their look (`_show_active`: the classes, unless a
  subclass draws it) and moves the underline (`Underline`, not exported,
  given in Textual's own layout of the tabs with its drawn lines kept,
  `KeptUnderline`: Textual draws it anew at every move through Rich)
  itself: Textual's own searches the tabs' widgets with CSS queries at
  every switch, a tab key's UI time. So do its moves of the
  underline after a relabel or a resize (`_highlight_active`), and its
  scroll to the active tab (`_scroll_active_tab`): both are overridden to
  use the tabs as given, since new counts relabel them every second.
- A pane's border title (`retitle`): Textual's setter repaints the whole
  widget, and the detail pane's title names the row shown, so every key
  that brings a new row repainted every line of the pane (borders and
  background) for one changed row; `retitle` sets it (`_border_title`, as
  the setter does) and repaints the top row only.
- A key held back during a paste burst (typeahead.py) is handed to the
  focused widget as Textual hands it keys (`forward_key`): marked as
  forwarded, or it would bubble back to the app and be taken for a new key.
  Nothing public marks an event forwarded.
- A strip divided at its own end (`Strip.divide`, `divide_whole_uncached`):
  Textual's compositor divides every line it draws at the widgets' edges,
  and a line drawn whole is "divided" at its own end. Textual caches that
  answer, `[self]`, inside the strip itself, so every such strip is a
  reference cycle (the strip, its cache, the list, the strip) that only the
  garbage collector frees, with its caches and segments: nearly all of the
  garbage a key made, and a full collection's work when one lands between
  keys. The same answer is given uncached; any other division is Textual's.
- A scroll view's scrollbars (`SteadyScrollbars`): at every layout of the
  screen, Textual tells each scroll view its size (`_size_updated`), which
  compares the size of its content area with the view's own virtual size:
  they differ for every view that scrolls, so each layout updates the
  view's scrollbars (`_scroll_update`) and draws them anew, every line,
  although nothing they show changed. A tab key lays the screen out (new
  counts relabel the tabs, a new detail changes its height), and the
  table's scrollbar was drawn again with its thumb where it was. The
  update is skipped when what it is made of (the virtual size, the content
  area, the scrollbars shown) is what the last one was made of; a new
  style (a theme) updates them again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual import events
from textual.app import ComposeResult
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Footer, Tab, Tabs
from textual.widgets._footer import FooterKey
from textual.widgets._tabs import Underline

from reclaim_tui.tui.widgets.kept import Kept

__all__ = [
    "FooterKey",
    "KeptUnderline",
    "SteadyScrollbars",
    "StillTabs",
    "bindings_ready",
    "divide_whole_uncached",
    "forward_key",
    "retitle",
]

#: Textual's own `Strip.divide`, for every division but the whole strip's.
_TEXTUAL_DIVIDE = Strip.divide


def _divide(strip: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    length = strip.cell_length
    kept = [cut for cut in cuts if cut <= length]  # as Textual's divide keeps them
    if kept == [length]:
        return [strip]  # Textual's answer, not cached in the strip itself
    return _TEXTUAL_DIVIDE(strip, kept)


def divide_whole_uncached() -> None:
    """Have `Strip.divide` answer a division at the strip's own end without
    caching it in the strip (module docstring); once per process."""
    Strip.divide = _divide  # type: ignore[method-assign,assignment]


def bindings_ready(footer: Footer) -> bool:
    """The footer has read its screen's bindings (it composes nothing before)."""
    return bool(footer._bindings_ready)


def forward_key(widget: Widget, key: events.Key) -> None:
    """Hand `key` to `widget` as the app hands a focused widget its keys."""
    widget._forward_event(key)


def retitle(widget: Widget, title: str) -> None:
    """Set `widget`'s border title (plain text), repainting its top row only."""
    if widget.border_title == title:
        return
    width = widget.outer_size.width
    if not widget.is_mounted or not width:
        widget.border_title = title  # nothing drawn yet: Textual's own setter
        return
    widget._border_title = widget.render_str(title).expand_tabs(4).split()[0]
    offset = widget.content_offset  # refresh regions are relative to the content
    widget.refresh(Region(-offset.x, -offset.y, width, 1))


class KeptUnderline(Underline):
    """The tabs' underline, its line kept by what it shows (module
    docstring): a tab key moves it, and Textual draws it anew each time
    through Rich's `Bar`, a tab key's UI time for one line that takes one
    of a few shapes (a place per tab, per width)."""

    def __init__(self) -> None:
        super().__init__()
        #: The lines drawn, by what they show.
        self.kept: Kept[tuple[object, ...], Strip] = Kept(64)

    def render_line(self, y: int) -> Strip:
        span = (self.highlight_start, self.highlight_end) if self.show_highlight else (0, 0)
        bar = self.get_component_rich_style("underline--bar")
        key = (y, self.size, span, bar, self.rich_style)
        line = self.kept.get(key)
        if line is None:
            line = self.kept.keep(key, super().render_line(y))
        return line


class StillTabs(Tabs):
    """Tabs whose underline moves to the new tab at once, and whose switch
    searches no widgets (module docstring). The tabs are the ones given:
    none is added or removed later."""

    def __init__(self, *tabs: Tab) -> None:
        super().__init__(*tabs)
        #: The tabs by id, as given.
        self.tabs_by_id: dict[str, Tab] = {tab.id: tab for tab in tabs if tab.id}
        self._underline: Underline | None = None
        self._scroller: Widget | None = None
        #: Whether a switch is announced (TabActivated): not when it follows
        #: the caller's own state (`highlight`).
        self._announce = True

    def compose(self) -> ComposeResult:
        # Textual's own tabs, with the underline that keeps its lines.
        for widget in super().compose():
            yield KeptUnderline() if type(widget) is Underline else widget

    def on_mount(self) -> None:
        self._underline = self.query_one(Underline)
        self._scroller = self.query_one("#tabs-scroll")

    @property
    def active_tab(self) -> Tab | None:
        return self.tabs_by_id.get(self.active)

    def _highlight_active(self, animate: bool = True) -> None:
        # After a relabel or a resize: the tabs are laid out again at the
        # next refresh, and only then is the active one's place known.
        if self._underline is None or self.active_tab is None:
            super()._highlight_active(animate=False)  # none active, or before the mount
            return
        self._underline.show_highlight = True
        self.call_after_refresh(self._place_underline)

    def _scroll_active_tab(self) -> None:
        tab = self.active_tab
        if tab is not None and self._scroller is not None:
            self._scroller.scroll_to_center(tab, force=True)

    def _place_underline(self) -> None:
        tab, underline = self.active_tab, self._underline
        if tab is not None and underline is not None:
            underline.highlight_start, underline.highlight_end = tab.virtual_region.shrink(
                tab.styles.gutter
            ).column_span

    def highlight(self, active: str) -> None:
        """Make `active` the active tab without announcing it: the caller
        switched to it already, and the announcement went through the
        screen and the app to say so for nothing. A click announces.

        Nor is the bar itself repainted: Textual's `active` repaints the
        whole bar, its own lines and every tab, where a switch changes the
        two tabs' looks and the underline, which repaint themselves."""
        previous = self.active
        active = self.validate_active(active)
        self._announce = False
        try:
            if self._underline is None or active == previous:
                self.active = active  # before the mount: Textual's own way
                return
            self.set_reactive(Tabs.active, active)
            self.watch_active(previous, active)
        finally:
            self._announce = True

    def _show_active(self, old: Tab | None, new: Tab) -> None:
        """Give `new` the active tab's look and take it from `old`: Textual's
        way, the `-active` class (a subclass may draw the look itself)."""
        if old is not None:
            old.remove_class("-active")
        new.add_class("-active")

    def validate_active(self, active: str) -> str:
        if active in self.tabs_by_id:
            return active
        return super().validate_active(active)  # "" (none), or not a tab: Textual says

    def watch_active(self, previously_active: str, active: str) -> None:
        tab, underline = self.tabs_by_id.get(active), self._underline
        if tab is None or underline is None:
            super().watch_active(previously_active, active)  # none, or before the mount
            return
        self._show_active(self.tabs_by_id.get(previously_active), tab)
        # A switch changes no tab's width (the labels carry the counts,
        # and only those relabel): the underline goes under the new tab now.
        underline.show_highlight = True
        self._place_underline()
        if self._announce:
            self.post_message(self.TabActivated(self, tab))


class SteadyScrollbars(ScrollView):
    """A scroll view whose scrollbars are updated and drawn again only when
    what they show may have changed (module docstring)."""

    #: What the last update of the scrollbars was made of (None: update them).
    _bars_made_of: tuple[object, ...] | None = None

    def _scroll_update(self, virtual_size: Size) -> None:
        made_of = (
            virtual_size,
            self.container_size,
            self.show_vertical_scrollbar,
            self.show_horizontal_scrollbar,
        )
        if made_of == self._bars_made_of:
            return
        self._bars_made_of = made_of
        super()._scroll_update(virtual_size)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._bars_made_of = None  # a new style may size or colour them anew
