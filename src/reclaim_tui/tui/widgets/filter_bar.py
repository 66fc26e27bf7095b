"""The `/` filter line: free text over key, handle and input; status:, model:, error:."""

from __future__ import annotations

from textual.widgets import Input

__all__ = ["LINE_MAX", "FilterBar"]

#: The longest filter or command line (characters).
LINE_MAX = 2000


class FilterBar(Input):
    DEFAULT_CSS = """
    FilterBar { display: none; border: tall $accent; }
    FilterBar.-open { display: block; }
    """

    def __init__(self) -> None:
        super().__init__(
            placeholder="filter: text in key, handle or input (3+ characters use the index;"
            " 1–2 scan every row) · status:failed · model:flash · error:429 (enter applies,"
            " empty clears, esc closes)",
            id="filter",
            # A pasted page is not a filter; capped, the input stays quick.
            max_length=LINE_MAX,
        )

    def open(self, current: str) -> None:
        self.value = current
        self.add_class("-open")
        self.focus()
        self.cursor_position = len(current)

    def close(self) -> None:
        self.remove_class("-open")
