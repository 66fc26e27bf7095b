"""What the operator is looking at: tab, filter, sort, window and marks (no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

from reclaim_tui.core.models import Status
from reclaim_tui.core.queries import SORTS, Page, RowFilter, View
from reclaim_tui.tui.keymap import TABS, TabSpec

__all__ = ["INTERVALS", "ConsoleState", "Window"]

#: The choices `+` / `-` step through (seconds between reclaim passes).
INTERVALS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)


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
    interval: float = 2.0
    paused: bool = False

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

    def step_interval(self, longer: bool) -> float:
        choices = INTERVALS
        if longer:
            bigger = [i for i in choices if i > self.interval]
            self.interval = bigger[0] if bigger else choices[-1]
        else:
            smaller = [i for i in choices if i < self.interval]
            self.interval = smaller[-1] if smaller else choices[0]
        return self.interval

    def toggle_mark(self, idem: str) -> bool:
        if idem in self.marks:
            self.marks.discard(idem)
            return False
        self.marks.add(idem)
        return True
