"""The ledger table: one window of rows; moving past its edge asks for the next."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rich.style import Style
from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui.format import age, next_poll, short

__all__ = ["COLUMNS", "LedgerTable"]

COLUMNS = (
    ("mark", " "),
    ("idem", "key"),
    ("status", "status"),
    ("model", "model"),
    ("handle", "handle"),
    ("attempts", "att"),
    ("age", "age in state"),
    ("next", "next poll"),
    ("updated", "updated"),
    ("error", "last error"),
)
#: Status → theme variable (resolved from the running theme, never hard-coded).
STATUS_COLOURS = {
    Status.RESERVING: "warning",
    Status.SUBMITTED: "foreground",
    Status.DONE: "primary-lighten-2",
    Status.CONSUMED: "success",
    Status.FAILED: "error",
    Status.CANCELLED: "foreground-darken-3",
}
#: Width of every column but the last error, padding included (the error gets the rest).
FIXED_WIDTH = 118


class LedgerTable(DataTable[Text]):
    """Shows a page; `PageRequested` when the cursor runs off either edge."""

    DEFAULT_CSS = """
    LedgerTable { height: 1fr; }
    LedgerTable > .datatable--header { text-style: bold; }
    """

    @dataclass
    class PageRequested(Message):
        direction: Literal["after", "before", "first", "last"]

    @dataclass
    class SortRequested(Message):
        column: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, id=id)
        self.has_before = False
        self.has_after = False
        self.rows_shown: list[Row] = []
        self._drawn: list[list[Text]] = []
        #: Windows drawn so far (benchmarks and tests wait on it).
        self.renders = 0

    def on_mount(self) -> None:
        for key, label in COLUMNS[:-1]:
            self.add_column(label, key=key)
        key, label = COLUMNS[-1]
        self.add_column(label, key=key, width=self._error_width())

    def _error_width(self) -> int:
        return max(16, self.size.width - FIXED_WIDTH)

    def on_resize(self) -> None:
        column = self.columns.get(ColumnKey("error"))
        if column is not None and column.width != self._error_width():
            column.width = self._error_width()
            self._require_update_dimensions = True
            self.refresh()

    # -- rendering -------------------------------------------------------------------
    def _styles(self) -> dict[Status, Style]:
        variables = self.app.theme_variables
        return {s: Style.parse(variables.get(v, "")) for s, v in STATUS_COLOURS.items()}

    def show_rows(
        self,
        rows: list[Row],
        now: float,
        marks: set[str],
        dead: Iterable[str] = (),
        cursor: str = "keep",
    ) -> None:
        """Replace the window; the cursor stays on its row when it is still shown.

        The same rows in the same order (the usual refresh: only ages moved)
        are updated cell by cell, so the table neither flickers nor scrolls.
        """
        styles = self._styles()
        dead = set(dead)
        cells = [self._cells(row, now, marks, dead, styles) for row in rows]
        same = [r.idem for r in rows] == [r.idem for r in self.rows_shown]
        self.rows_shown = rows
        self.renders += 1
        if same and cursor == "keep" and len(self._drawn) == len(cells):
            self._update_cells(rows, cells)
            return
        current, index = self.current_idem(), self.cursor_row
        self.clear()
        for row, row_cells in zip(rows, cells, strict=True):
            self.add_row(*row_cells, key=row.idem)
        self._drawn = cells
        if not rows:
            return
        target = {"top": 0, "bottom": len(rows) - 1}.get(cursor)
        if target is None:
            keys = [r.idem for r in rows]
            target = keys.index(current) if current in keys else min(index, len(rows) - 1)
        self.move_cursor(row=target, animate=False)

    def _update_cells(self, rows: list[Row], cells: list[list[Text]]) -> None:
        for row, new, old in zip(rows, cells, self._drawn, strict=True):
            for (key, _), a, b in zip(COLUMNS, new, old, strict=True):
                if a.plain != b.plain or a.style != b.style:
                    self.update_cell(row.idem, key, a)
        self._drawn = cells

    def _cells(
        self, row: Row, now: float, marks: set[str], dead: set[str], styles: dict[Status, Style]
    ) -> list[Text]:
        orphan = row.is_orphan(now, dead)
        when = "orphan" if orphan and not row.held else next_poll(row, now)
        error = (row.last_error or "").splitlines()[0][:120] if row.last_error else ""
        return [
            Text("●" if row.idem in marks else " "),
            Text(short(row.idem)),
            Text(row.status.value, style=styles[row.status]),
            Text(row.model),
            Text(row.handle or "—"),
            Text(str(row.attempts), justify="right"),
            Text(age(now - row.state_since), justify="right"),
            Text(when, style=styles[Status.FAILED] if orphan else ""),
            Text(age(now - row.updated_at) + " ago", justify="right"),
            Text(error, style=styles[Status.FAILED] if error else ""),
        ]

    def current_row(self) -> Row | None:
        if 0 <= self.cursor_row < len(self.rows_shown):
            return self.rows_shown[self.cursor_row]
        return None

    def current_idem(self) -> str | None:
        row = self.current_row()
        return row.idem if row is not None else None

    def set_mark(self, idem: str, marked: bool) -> None:
        if idem in self.rows:
            cell = Text("●" if marked else " ")
            self.update_cell(idem, "mark", cell)
            index = [r.idem for r in self.rows_shown].index(idem)
            self._drawn[index][0] = cell

    # -- paging at the edges ------------------------------------------------------------
    def action_cursor_down(self) -> None:
        if self.has_after and self.cursor_row >= self.row_count - 1:
            self.post_message(self.PageRequested("after"))
            return
        super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.has_before and self.cursor_row <= 0:
            self.post_message(self.PageRequested("before"))
            return
        super().action_cursor_up()

    def action_page_down(self) -> None:
        if self.has_after and self.cursor_row >= self.row_count - 1:
            self.post_message(self.PageRequested("after"))
            return
        super().action_page_down()

    def action_page_up(self) -> None:
        if self.has_before and self.cursor_row <= 0:
            self.post_message(self.PageRequested("before"))
            return
        super().action_page_up()

    def action_scroll_top(self) -> None:
        self.post_message(self.PageRequested("first"))

    def action_scroll_bottom(self) -> None:
        self.post_message(self.PageRequested("last"))

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        key = event.column_key.value or ""
        if key in ("age", "updated"):
            event.stop()
            self.post_message(self.SortRequested(key))
