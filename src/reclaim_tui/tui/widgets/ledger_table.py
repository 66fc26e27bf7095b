"""The ledger table: one window of rows; moving past its edge asks for the next.

Its state is here (the rows shown, the window's edges, the columns chosen);
what a row's cells say is table_cells.py's, where the cursor lands
table_window.py's, and drawing the lines line_table.py's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message

from reclaim_tui.core.models import Row
from reclaim_tui.tui import columns
from reclaim_tui.tui.state import Cursor
from reclaim_tui.tui.widgets.line_paint import text_width
from reclaim_tui.tui.widgets.line_table import LineTable
from reclaim_tui.tui.widgets.table_cells import COLUMNS, mark_cell, row_cells, status_styles
from reclaim_tui.tui.widgets.table_window import Asked, crossing, landing_row

__all__ = ["LedgerTable"]


#: A sorted column's header before its arrow, where the whole label and the
#: arrow would be wider than the column.
_MARKED = {"age": "age", "next": "next"}


class LedgerTable(LineTable):
    """Shows a page; `PageRequested` when the cursor runs off either edge."""

    DEFAULT_CSS = """
    LedgerTable { height: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        # A table's home/end scroll sideways; here they go to the view's ends.
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
        Binding("enter", "select_cursor", "Detail"),  # shown: the footer lists enter
    ]

    @dataclass
    class PageRequested(Message):
        """The cursor is crossing an edge of the window: show the window in
        `direction` with the cursor on its row `cursor` (negative: from its end)."""

        direction: Literal["after", "before", "first", "last"]
        cursor: int = 0

    @dataclass
    class SortRequested(Message):
        column: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(zebra_stripes=True, id=id)
        self.has_before = False
        self.has_after = False
        self.rows_shown: list[Row] = []
        self._drawn: list[list[Text]] = []
        #: The window asked for and not shown yet, and where its cursor goes:
        #: keys pressed meanwhile move that target instead of asking again.
        self._asked: Asked | None = None
        #: A window was asked for (PageRequested) and the screen has not read it yet.
        self.asking = False
        #: Windows drawn so far (benchmarks and tests wait on it).
        self.renders = 0
        #: The columns the operator chose (None: all) and those shown (tui/columns.py).
        self.chosen: tuple[str, ...] | None = None
        self.shown: frozenset[str] = frozenset()
        self._shown_at: list[int] = []
        #: The key column's characters the rows were drawn with (tui/columns.py).
        self._key_width = columns.KEY_SHORT
        #: The column the rows are sorted by and its arrow, in its header.
        self.sort_mark: tuple[str, str] | None = None

    def on_mount(self) -> None:
        self._lay_out()

    def choose_columns(self, chosen: tuple[str, ...] | None) -> None:
        """Show these columns (config.COLUMN_NAMES; None: all), as many as fit."""
        self.chosen = chosen
        self._lay_out()

    def _lay_out(self) -> None:
        """Add the columns that fit the width (tui/columns.py); when the set
        changes, the rows on screen are put back under the new columns."""
        shown = columns.fit(self.size.width, self.chosen)
        if shown == self.shown and self.columns:
            return
        self.shown = shown
        self._shown_at = [i for i, (key, _) in enumerate(COLUMNS) if key in shown]
        cursor = self.cursor_row
        self.clear(columns=True)
        for key, label in COLUMNS:
            if key in shown:
                width = self._error_width() if key == "error" else None
                self.add_column(self._label(key, label), key=key, width=width)
        self.add_rows(
            (row.idem, self._visible(cells))
            for row, cells in zip(self.rows_shown, self._drawn, strict=True)
        )
        if self.rows_shown:
            self.move_cursor(row=max(0, min(cursor, len(self.rows_shown) - 1)), animate=False)

    def _label(self, key: str, label: str) -> str:
        mark = self.sort_mark
        if mark is None or mark[0] != key:
            return label
        # No wider than the label it replaces: the layout's budgets hold (tui/columns.py).
        return f"{_MARKED.get(key, label)} {mark[1]}" if key != "attempts" else f"at{mark[1]}"

    def mark_sort(self, column: str | None, arrow: str) -> None:
        """Show `arrow` in the header of `column` (a table column; None: no column's)."""
        mark = None if column is None else (column, arrow)
        if mark == self.sort_mark:
            return
        self.sort_mark = mark
        for key, label in COLUMNS:
            column_of = self.columns.get(key)
            if column_of is not None:
                column_of.label = Text(self._label(key, label))
                column_of.content_width = max(column_of.content_width, column_of.label.cell_len)
        self._resized()

    def _visible(self, cells: list[Text]) -> list[Text]:
        return [cells[i] for i in self._shown_at]

    def _error_width(self) -> int:
        return columns.error_width(self.size.width, self.shown)

    def on_resize(self) -> None:
        self._lay_out()
        column = self.columns.get("error")
        if column is not None and column.width != self._error_width():
            column.width = self._error_width()
            self._resized()

    # -- a new window ----------------------------------------------------------------
    def show_rows(
        self,
        rows: list[Row],
        now: float,
        marks: set[str],
        dead: Iterable[str] = (),
        cursor: Cursor = "keep",
    ) -> None:
        """Replace the window; the cursor goes to `cursor` ("top", "bottom", a
        row index, negative from the end) or, by default, stays on its row
        when it is still shown.

        The same rows in the same order (the usual refresh: only ages moved)
        are updated cell by cell, so the table neither flickers nor scrolls.
        """
        asked, self._asked = self._asked, (self._asked if cursor == "keep" else None)
        styles, dead, error_width = (
            status_styles(self.app.theme_variables),
            set(dead),
            self._error_width(),
        )
        key_width = columns.key_width(self.size.width)
        cells = [row_cells(row, now, marks, dead, styles, error_width, key_width) for row in rows]
        same = [r.idem for r in rows] == [r.idem for r in self.rows_shown]
        # The row under the cursor, read before the window is replaced: read
        # after, it is whichever new row sits at the old index.
        current, index = self.current_idem(), self.cursor_row
        self.rows_shown = rows
        self.renders += 1
        # A new key width (the terminal was resized) is drawn afresh: the
        # key column's auto width only grows cell by cell.
        keys_as_drawn, self._key_width = self._key_width == key_width, key_width
        if same and cursor == "keep" and len(self._drawn) == len(cells) and keys_as_drawn:
            self._update_cells(rows, cells)
            return
        # Auto widths only grow: a column fits the window shown, not the
        # widest cell it ever held (the handle column kept a long handle's
        # width and squeezed the error column).
        for column in self.columns.values():
            if column.auto_width:
                column.content_width = text_width(column.label.plain)
        self.replace_rows(
            (row.idem, self._visible(drawn)) for row, drawn in zip(rows, cells, strict=True)
        )
        self._drawn = cells
        if not rows:
            return
        target = landing_row(cursor, asked, [r.idem for r in rows], current, index)
        self.move_cursor(row=target, animate=False)

    def _update_cells(self, rows: list[Row], cells: list[list[Text]]) -> None:
        for row, new, old in zip(rows, cells, self._drawn, strict=True):
            for (key, _), a, b in zip(COLUMNS, new, old, strict=True):
                if key not in self.shown:
                    continue
                # Cells are shared texts (table_cells.py): the same one is unchanged.
                if a is not b and (a.plain != b.plain or a.style != b.style):
                    self.update_cell(row.idem, key, a)
        self._drawn = cells

    def current_row(self) -> Row | None:
        if 0 <= self.cursor_row < len(self.rows_shown):
            return self.rows_shown[self.cursor_row]
        return None

    def current_idem(self) -> str | None:
        row = self.current_row()
        return row.idem if row is not None else None

    def set_mark(self, idem: str, marked: bool) -> None:
        if self.has_row(idem):
            cell = mark_cell(marked)
            self.update_cell(idem, "mark", cell)
            index = [r.idem for r in self.rows_shown].index(idem)
            self._drawn[index][0] = cell

    # -- paging at the edges ------------------------------------------------------------
    def _page_rows(self) -> int:
        """Rows one page key moves (the table's own measure)."""
        return max(1, self.scrollable_content_region.height - self.header_height)

    def _cross(self, direction: Literal["after", "before"], step: int) -> bool:
        """Ask for the window past the edge when moving `step` rows (negative:
        up) from the cursor crosses it; False when the move stays inside."""
        edge = self.has_after if direction == "after" else self.has_before
        asked = crossing(direction, step, self.cursor_row, self.row_count, edge, self._asked)
        if asked is None:
            return False
        self._asked = asked
        self.asking = True
        self.post_message(self.PageRequested(direction, asked[1]))
        return True

    def action_cursor_down(self) -> None:
        if not self._cross("after", 1):
            super().action_cursor_down()

    def action_cursor_up(self) -> None:
        if not self._cross("before", -1):
            super().action_cursor_up()

    def action_page_down(self) -> None:
        if not self._cross("after", self._page_rows()):
            super().action_page_down()

    def action_page_up(self) -> None:
        if not self._cross("before", -self._page_rows()):
            super().action_page_up()

    def action_scroll_top(self) -> None:
        self._asked, self.asking = None, True
        self.post_message(self.PageRequested("first", 0))

    def action_scroll_bottom(self) -> None:
        self._asked, self.asking = None, True
        self.post_message(self.PageRequested("last", -1))

    def on_line_table_header_selected(self, event: LineTable.HeaderSelected) -> None:
        key = event.column_key
        if key != "mark":
            event.stop()
            self.post_message(self.SortRequested(key))
