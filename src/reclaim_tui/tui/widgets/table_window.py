"""Where the ledger table's cursor goes: in a new window, and across the
window's edges (the next window asked for, the keys pressed while it loads
counted too). Plain functions over the table's state: no widget here."""

from __future__ import annotations

from typing import Literal

from reclaim_tui.tui.state import Cursor

__all__ = ["Asked", "crossing", "landing_row"]

#: A window asked for and not shown yet: its direction and the row its cursor goes to.
Asked = tuple[str, int]


def landing_row(
    cursor: Cursor, asked: Asked | None, keys: list[str], current: str | None, index: int
) -> int:
    """The row of a new window of `keys` the cursor lands on: `cursor`
    ("top", "bottom", a row index, negative from the end; the keys pressed
    while the window loaded move it, `asked`) or, for "keep", the row it was
    on (`current`) when still shown, else the same index."""
    if isinstance(cursor, int):
        if asked is not None:
            cursor = asked[1]  # with the keys pressed while it loaded
        target = cursor if cursor >= 0 else len(keys) + cursor
    elif cursor in ("top", "bottom"):
        target = 0 if cursor == "top" else len(keys) - 1
    else:
        target = keys.index(current) if current in keys else index
    return max(0, min(target, len(keys) - 1))


def crossing(
    direction: Literal["after", "before"],
    step: int,
    cursor_row: int,
    row_count: int,
    has_edge: bool,
    asked: Asked | None,
) -> Asked | None:
    """The window to ask for when moving `step` rows (negative: up) from
    `cursor_row` crosses the edge in `direction` (`has_edge`: there are rows
    past it), with the row its cursor lands on; None when the move stays
    inside the window."""
    target = cursor_row + step
    if not has_edge:
        return None
    if direction == "after":
        if target < row_count:
            return None
        landing = target - row_count
    else:
        if target >= 0:
            return None
        landing = target  # from the end of the window before
    if asked is not None and asked[0] == direction:
        landing = asked[1] + step  # the keys pressed while it loads count too
    return (direction, landing)
