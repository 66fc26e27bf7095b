"""Status tabs with live counts (All · reserving · orphans · … · cancelled)."""

from __future__ import annotations

from textual.widgets import Tab, Tabs

from reclaim_tui.tui.keymap import TABS

__all__ = ["StatusTabs"]


class StatusTabs(Tabs):
    """One tab per view; labels carry the counts. Keys 1–8 switch (the main screen's
    bindings), so the tabs never take focus from the table."""

    DEFAULT_CSS = """
    StatusTabs { height: 2; }
    StatusTabs Tab { padding: 0 1; }
    """
    can_focus = False

    def __init__(self) -> None:
        tabs = [Tab(self._label(n, t.label, None), id=t.id) for n, t in enumerate(TABS, start=1)]
        super().__init__(*tabs)

    @staticmethod
    def _label(number: int, label: str, count: int | None) -> str:
        shown = "…" if count is None else f"{count:,}"
        return f"{number} {label} {shown}"

    def show_counts(self, counts: dict[str, int]) -> None:
        """`counts` maps tab id → rows in it."""
        for number, tab in enumerate(TABS, start=1):
            widget = self.query_one(f"#{tab.id}", Tab)
            widget.label = self._label(number, tab.label, counts.get(tab.id))
