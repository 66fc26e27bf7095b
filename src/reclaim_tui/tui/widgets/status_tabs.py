"""Status tabs with live counts (All · reserving · orphans · … · cancelled)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import RenderResult
from textual.content import Content
from textual.widgets import Tab

from reclaim_tui.tui.tabs import TABS, TabSpec
from reclaim_tui.tui.widgets.textual_private import StillTabs

__all__ = ["StatusTab", "StatusTabs", "compact_count"]


def compact_count(count: int) -> str:
    """At most four characters: 987, 1.2k, 12k, 3.4M."""
    for size, unit in ((1_000_000, "M"), (1_000, "k")):
        if count >= size:
            scaled = count / size
            return f"{scaled:.1f}{unit}" if scaled < 10 else f"{int(scaled)}{unit}"
    return str(count)


Form = tuple[Callable[[TabSpec], str], Callable[[int], str], bool]

#: Label forms, longest first: (name, count, tight). The first whose labels
#: fit the width is used; a tight one drops each tab's right padding.
FORMS: tuple[Form, ...] = (
    (lambda t: t.label, lambda n: f"{n:,}", False),
    (lambda t: t.label.split(" (")[0], lambda n: f"{n:,}", False),
    (lambda t: t.short, compact_count, False),
    (lambda t: t.short, compact_count, True),
)


class StatusTab(Tab):
    """A tab that draws the active tab's look itself: the colour of Textual's
    `Tab.-active` rule, given to its label by a component class. The class
    would restyle the two tabs at every switch (Textual applies every rule
    matching them again, a tab key's UI time); a switch here repaints them.
    In ANSI colour mode, where Textual's rule also changes the text style,
    the class is used as Textual's."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"status-tab--active"}
    DEFAULT_CSS = """
    StatusTab > .status-tab--active { color: $foreground; }
    """

    def __init__(self, label: str, *, id: str) -> None:
        super().__init__(label, id=id)
        #: Drawn as the active tab.
        self.lit = False

    def light(self, lit: bool) -> None:
        if lit != self.lit:
            self.lit = lit
            self.refresh()

    def render(self) -> RenderResult:
        visual = super().render()
        if self.lit and isinstance(visual, Content) and not self.app.native_ansi_color:
            return visual.stylize(self.get_visual_style("status-tab--active", partial=True))
        return visual


class StatusTabs(StillTabs):
    """One tab per view; labels carry the counts. Keys 1–8 switch (the main screen's
    bindings), so the tabs never take focus from the table. Labels shorten until
    all eight fit the width."""

    DEFAULT_CSS = """
    StatusTabs { height: 2; }
    StatusTabs Tab { padding: 0 1; }
    StatusTabs.-tight Tab { padding: 0 0 0 1; }
    """
    can_focus = False

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        tabs = [
            StatusTab(self._label(n, t, None, FORMS[0]), id=t.id) for n, t in enumerate(TABS, 1)
        ]
        super().__init__(*tabs)

    @staticmethod
    def _label(number: int, tab: TabSpec, count: int | None, form: Form) -> str:
        name, counted, _ = form
        return f"{number} {name(tab)} {'…' if count is None else counted(count)}"

    def _show_active(self, old: Tab | None, new: Tab) -> None:
        if self.app.native_ansi_color:
            super()._show_active(old, new)
        elif old is not None:
            old.remove_class("-active")  # given by Textual before the mount, if at all
        for tab, lit in ((old, False), (new, True)):
            if isinstance(tab, StatusTab):
                tab.light(lit)

    def show_counts(self, counts: dict[str, int]) -> None:
        """`counts` maps tab id → rows in it."""
        self._counts = counts
        self._relabel()

    def on_resize(self) -> None:
        self._relabel()

    def _relabel(self) -> None:
        width, form = self.size.width, FORMS[-1]
        for candidate in FORMS:
            labels = self._labels(candidate)
            padding = 1 if candidate[2] else 2
            if not width or sum(len(label) + padding for label in labels) <= width:
                form = candidate
                break
        self.set_class(form[2], "-tight")
        for tab, label in zip(TABS, self._labels(form), strict=True):
            widget = self.tabs_by_id[tab.id]
            # A new label lays the tabs out again and moves the underline:
            # only for a count that changed (counts come every second).
            if widget.label.plain != label:
                widget.label = label

    def _labels(self, form: Form) -> list[str]:
        return [
            self._label(n, tab, self._counts.get(tab.id), form) for n, tab in enumerate(TABS, 1)
        ]
