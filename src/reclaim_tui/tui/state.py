"""What the operator is looking at: tab, filter, sort, window, marks and the
ledger's counts (no I/O). The loop's pace is in pace.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from reclaim_tui.core.models import Status
from reclaim_tui.core.queries import SORTS, Page, RowFilter, View
from reclaim_tui.tui.keymap import TABS, TabSpec

__all__ = ["ConsoleState", "Window"]


@dataclass
class Window:
    """The page on screen and where it sits in the view (offset is approximate
    while the ledger changes under it)."""

    page: Page = field(default_factory=lambda: Page([], False, False))
    view: View = field(default_factory=View)
    offset: int = 0

    def key(self, index: int) -> tuple[float, str] | None:
        """The sort key of the row at `index` (negative counts from the end)."""
        rows = self.page.rows
        return self.view.key_of(rows[index]) if rows else None


@dataclass
class ConsoleState:
    tab: str = "all"
    filter_text: str = ""
    filter: RowFilter = field(default_factory=RowFilter)
    sort_index: int = 0
    marks: set[str] = field(default_factory=set)
    window: Window = field(default_factory=Window)
    counts: dict[str, int] = field(default_factory=dict)
    orphans: int = 0

    @property
    def tab_spec(self) -> TabSpec:
        return next(t for t in TABS if t.id == self.tab)

    def view(self) -> View:
        spec = self.tab_spec
        statuses = frozenset({Status(spec.status)}) if spec.status else None
        return View(statuses, spec.orphans, self.filter, SORTS[self.sort_index])

    def tab_count(self, tab: TabSpec) -> int:
        if tab.orphans:
            return self.orphans
        if tab.status is None:
            return sum(self.counts.values())
        return self.counts.get(tab.status, 0)

    def set_filter(self, text: str) -> None:
        """Parse and apply a filter line; ValueError leaves the old filter."""
        parsed = RowFilter.parse(text)
        self.filter_text, self.filter = text.strip(), parsed

    def toggle_mark(self, idem: str) -> bool:
        if idem in self.marks:
            self.marks.discard(idem)
            return False
        self.marks.add(idem)
        return True
