"""A table of one-line rows with a row cursor, on Textual's Line API (the
rows and their drawing: line_rows.py). It moves as Textual's `DataTable`
with a row cursor does: the same keys, the same messages (a row
highlighted, a row selected, a header clicked), the same scrolling.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Spacing
from textual.message import Message

from reclaim_tui.tui.widgets.line_rows import Column, LineRows

__all__ = ["Column", "LineTable"]


class LineTable(LineRows):
    """Rows of one-line cells under a header, a row cursor (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor is on a row (moved there, or the rows under it changed)."""

        def __init__(self, table: LineTable, cursor_row: int, row_key: str) -> None:
            super().__init__()
            self.table, self.cursor_row, self.row_key = table, cursor_row, row_key

        @property
        def control(self) -> LineTable:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter, or a click on the cursor's row."""

    class HeaderSelected(Message):
        """A click on a column's header."""

        def __init__(self, table: LineTable, column_key: str, column_index: int) -> None:
            super().__init__()
            self.table, self.column_key, self.column_index = table, column_key, column_index

        @property
        def control(self) -> LineTable:
            return self.table

    # -- the cursor --------------------------------------------------------------------
    def move_cursor(self, *, row: int, animate: bool = False, scroll: bool = True) -> None:
        """Put the cursor on `row` (clamped to the rows) and bring it into view."""
        row = max(0, min(row, len(self._keys) - 1))
        old, self._cursor = self._cursor, row
        if old != row:
            self._refresh_row(old)
            self._refresh_row(row)
            self._announce(row)
        self.scroll_cursor_into_view(animate=animate)
        if scroll and self.rows_changed:
            # A new virtual size is applied at the next layout: scroll again after it.
            self.rows_changed = False
            self.call_after_refresh(self.scroll_cursor_into_view)

    def _announce(self, row: int) -> None:
        if 0 <= row < len(self._keys):
            self.post_message(self.RowHighlighted(self, row, self._keys[row]))

    def scroll_cursor_into_view(self, animate: bool = False) -> None:
        width = max(self.size.width, self.virtual_size.width)
        region = Region(int(self.scroll_x), self._cursor + self.header_height, width, 1)
        spacing = Spacing(self.header_height, 0, 0, 0)
        self.scroll_to_region(region, animate=animate, spacing=spacing, force=True)

    def _page_height(self) -> int:
        return self.scrollable_content_region.height - self.header_height

    def action_cursor_up(self) -> None:
        self._hover_off()
        self.move_cursor(row=self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._hover_off()
        self.move_cursor(row=self._cursor + 1)

    def action_page_down(self) -> None:
        self._hover_off()
        height = self._page_height()
        step = min(height + 1, len(self._keys) - self._cursor)
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self._cursor + step - 1, scroll=False)

    def action_page_up(self) -> None:
        self._hover_off()
        height = self._page_height()
        step = min(height + 1, self._cursor + 1)
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self._cursor - step + 1, scroll=False)

    def action_scroll_top(self) -> None:
        self._hover_off()
        self.move_cursor(row=0)

    def action_scroll_bottom(self) -> None:
        self._hover_off()
        self.move_cursor(row=len(self._keys) - 1)

    def action_scroll_home(self) -> None:
        self._hover_off()
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._hover_off()
        self.scroll_x = self.max_scroll_x

    def action_select_cursor(self) -> None:
        self._hover_off()
        if self._keys:
            self.post_message(self.RowSelected(self, self._cursor, self._keys[self._cursor]))

    # -- the mouse ---------------------------------------------------------------------
    def on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        self._set_hover(meta.get("row") if "row" in meta else None)

    def on_leave(self) -> None:
        self._hover_off()

    def on_click(self, event: events.Click) -> None:
        meta = event.style.meta
        if "row" not in meta or "column" not in meta:
            return
        row, column = meta["row"], meta["column"]
        if row == -1:
            key = list(self.columns)[column]
            self.post_message(self.HeaderSelected(self, key, column))
            return
        if not 0 <= row < len(self._keys):
            return
        selected = row == self._cursor
        self.move_cursor(row=row, animate=True)
        if selected:
            self.action_select_cursor()
        event.stop()
