"""What the operator is looking at: tab, filter, sort, window, marks and the
ledger's counts (no I/O). The main screen owns it; the loop's pace is in pace.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from reclaim_tui.core.ledger.console.views import (
    SORTS,
    Direction,
    Key,
    Page,
    RowFilter,
    Sort,
    View,
    column_sort,
    sort_refusal,
)
from reclaim_tui.core.models import Status
from reclaim_tui.tui.tabs import TABS, TabSpec

__all__ = ["ConsoleState", "Cursor", "Move", "Window"]

#: Where the window goes: the view's first or last rows, past either edge of
#: the window, or "from" its own first row again (a refresh).
Move = Literal["first", "from", "after", "before", "last"]
#: Where the cursor goes in a new window: "keep" its row (else its index),
#: "top", "bottom", or a row index (negative: from the window's end).
Cursor = Literal["keep", "top", "bottom"] | int


@dataclass
class Window:
    """The page on screen and where it sits in the view (offset is approximate
    while the ledger changes under it)."""

    page: Page = field(default_factory=lambda: Page([], False, False))
    view: View = field(default_factory=View)
    offset: int = 0

    def key(self, index: int) -> Key | None:
        """The sort key of the row at `index` (negative counts from the end)."""
        rows = self.page.rows
        return self.view.key_of(rows[index]) if rows else None


@dataclass
class ConsoleState:
    tab: str = "all"
    filter_text: str = ""
    filter: RowFilter = field(default_factory=RowFilter)
    sort_index: int = 0
    #: A sort by any column (shift+letter, `:sort`): it replaces `t`'s until `t`.
    column_sort: Sort | None = None
    marks: set[str] = field(default_factory=set)
    window: Window = field(default_factory=Window)
    counts: dict[str, int] = field(default_factory=dict)
    orphans: int = 0
    #: Panels the operator hid (config.PANELS) and the detail pane's width step (1–4).
    hidden: set[str] = field(default_factory=set)
    #: The table's columns the operator chose (config.COLUMN_NAMES; None: all that fit).
    columns: tuple[str, ...] | None = None
    detail_width: int = 2
    #: Named filters from the settings file (`[views]`), shown by `:view NAME`.
    views: dict[str, str] = field(default_factory=dict)

    @property
    def tab_spec(self) -> TabSpec:
        return next(t for t in TABS if t.id == self.tab)

    def view(self) -> View:
        spec = self.tab_spec
        statuses = frozenset({Status(spec.status)}) if spec.status else None
        view = View(statuses, spec.orphans, self.filter, SORTS[self.sort_index])
        if self.column_sort is not None:
            by_column = View(statuses, spec.orphans, self.filter, self.column_sort)
            # An unindexed sort on a tab too large for it: `t`'s sort (the bar says which).
            if sort_refusal(by_column, self.counts) is None:
                view = by_column
        return view

    @property
    def sort(self) -> Sort:
        """The sort the table is in."""
        return self.view().sort

    def sort_by(self, column: str, descending: bool | None = None) -> Sort:
        """Sort by table column `column` (None: ascending, or the other way
        when it is already the sort); ValueError says why not."""
        current = self.column_sort
        if descending is None:
            same = current is not None and self.sort == column_sort(column, current.descending)
            descending = same and current is not None and not current.descending
        sort = column_sort(column, descending)
        spec = self.tab_spec
        statuses = frozenset({Status(spec.status)}) if spec.status else None
        refusal = sort_refusal(View(statuses, spec.orphans, self.filter, sort), self.counts)
        if refusal is not None:
            raise ValueError(refusal)
        self.column_sort = sort
        return sort

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

    def window_text(self) -> str:
        """Which rows of the tab are shown, for the loop bar."""
        window, shown = self.window, len(self.window.page.rows)
        if not shown:
            return "no rows"
        of_tab = self.tab_count(self.tab_spec)
        if not self.filter_text:
            total = f" of {of_tab:,}"
        elif not (window.page.has_before or window.page.has_after):
            total = f" of {shown:,} matching (of {of_tab:,})"  # the whole match is shown
        else:  # how many match is not counted (a scan): the tab's count says the scale
            total = f" matching, of {of_tab:,}"
        return f"rows {window.offset + 1:,}–{window.offset + shown:,}{total}"

    def page_query(self, move: Move) -> tuple[View, Key | None, Direction]:
        """What to read for `move`: the view, the key to start at, the direction."""
        view, window = self.view(), self.window
        start = {"from": window.key(0), "after": window.key(-1), "before": window.key(0)}.get(move)
        if move == "from" and (window.view != view or not window.page.has_before):
            # A window at the top of its view stays there: rows added since
            # that sort before its first row (newest first) are shown too.
            start = None
        return view, start, "from" if move == "first" else move

    def page_offset(self, window: Window, move: Move, rows: int) -> int:
        """Where the page of `rows` rows read for `move` from `window` sits in the view."""
        total = self.tab_count(self.tab_spec)
        offset = {"first": 0, "from": window.offset, "after": window.offset + len(window.page.rows)}
        at = offset.get(move)
        if at is None:
            at = max(0, window.offset - rows) if move == "before" else total
            at = max(0, total - rows) if move == "last" else at
        return at

    def set_model(self, model: str) -> None:
        """Filter by `model` instead of any model the filter named (empty: by none)."""
        kept = [t for t in self.filter_text.split() if not t.lower().startswith("model:")]
        self.set_filter(" ".join([*kept, f"model:{model}"] if model else kept))

    def toggle_panel(self, panel: str) -> bool:
        """Hide or show `panel`; True when it is shown now."""
        self.hidden ^= {panel}
        return panel not in self.hidden

    def step_detail_width(self, step: int) -> int:
        self.detail_width = min(4, max(1, self.detail_width + step))
        return self.detail_width

    def toggle_mark(self, idem: str) -> bool:
        if idem in self.marks:
            self.marks.discard(idem)
            return False
        self.marks.add(idem)
        return True
