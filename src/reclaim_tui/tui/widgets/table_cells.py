"""What the ledger table shows of a row: its columns, and each row's cells as
plain one-line texts (what widgets/line_rows.py draws), coloured
by status from the running theme.

A window is 100 rows of ten cells, drawn again at every key and every
second's refresh of the ages: building its 1,000 `Text`s (each scanned for
control codes) was most of the UI thread's time in a new window.
A cell's `Text` is kept by what it is made of and shared: a status, a model,
an age, an error repeat down the column and across windows. Nothing changes a
cell's `Text` once made (the table replaces a cell, never edits it).

A row's cells that do not age (its key, status, model, handle, attempts and
error) are kept by the row's fields they show: a row shown again unchanged
(a refresh, a tab or window seen before) is not formatted again, its error
not read again.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from rich.console import JustifyMethod
from rich.style import Style
from rich.text import Text

from reclaim_tui.core.models import Row, Status
from reclaim_tui.core.row_notes import PLAN_READY
from reclaim_tui.tui.format import age, next_poll, short, shorten_error
from reclaim_tui.tui.widgets.kept import Kept

__all__ = [
    "CELLS_KEPT",
    "COLUMNS",
    "ROWS_KEPT",
    "STATUS_COLOURS",
    "mark_cell",
    "row_cells",
    "status_styles",
]

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


def status_styles(theme_variables: Mapping[str, str]) -> dict[Status, Style]:
    """Each status's style in the running theme (`App.theme_variables`)."""
    return dict(_parsed(tuple(theme_variables.get(v, "") for v in STATUS_COLOURS.values())))


@lru_cache(maxsize=8)
def _parsed(colours: tuple[str, ...]) -> tuple[tuple[Status, Style], ...]:
    """The statuses' styles from their colours (parsed once per theme: every
    window asks, and parsing six styles was a part of a tab key's time)."""
    return tuple((s, Style.parse(c)) for s, c in zip(STATUS_COLOURS, colours, strict=True))


#: Cells kept (the oldest dropped first): ~ten windows' worth of distinct cells.
CELLS_KEPT = 8192
_cells: Kept[tuple[str, Style | str, str | None], Text] = Kept(CELLS_KEPT)


def _cell(plain: str, style: Style | str = "", justify: JustifyMethod | None = None) -> Text:
    """The cell showing `plain` in `style`: one `Text`, shared (module docstring)."""
    key = (plain, style, justify)
    text = _cells.get(key)
    if text is None:
        text = _cells.keep(key, Text(plain, style=style, justify=justify))
    return text


def mark_cell(marked: bool) -> Text:
    return _cell("●" if marked else " ")


def row_cells(
    row: Row,
    now: float,
    marks: set[str],
    dead: set[str],
    styles: dict[Status, Style],
    error_width: int,
    key_width: int = 12,
) -> list[Text]:
    """The row's cells, one for each of `COLUMNS` (the table shows those that fit)."""
    orphan = row.is_orphan(now, dead)
    when = "orphan" if orphan and not row.held else next_poll(row, now)
    failed = styles[Status.FAILED]
    key, status, model, handle, attempts, error = _lasting_cells(
        row, styles[row.status], styles[Status.DONE], failed, error_width, key_width
    )
    return [
        mark_cell(row.idem in marks),
        key,
        status,
        model,
        handle,
        attempts,
        _cell(age(now - row.state_since), justify="right"),
        _cell(when, failed if orphan else ""),
        _cell(age(now - row.updated_at) + " ago", justify="right"),
        error,
    ]


#: A row's lasting cells (key, status, model, handle, attempts, error) kept
#: (the oldest dropped first): ~twenty windows' rows.
ROWS_KEPT = 2048
_lasting: Kept[tuple[object, ...], tuple[Text, ...]] = Kept(ROWS_KEPT)


def _lasting_cells(
    row: Row, own: Style, done: Style, failed: Style, error_width: int, key_width: int
) -> tuple[Text, ...]:
    """The cells of `row` that do not change with time, kept by what they show."""
    key = (
        row.idem, row.status, row.model, row.handle, row.attempts, row.last_error,
        own, done, failed, error_width, key_width,
    )  # fmt: skip
    cells = _lasting.get(key)
    if cells is None:
        cells = _lasting.keep(key, _format_lasting(row, own, done, failed, error_width, key_width))
    return cells


def _format_lasting(
    row: Row, own: Style, done: Style, failed: Style, error_width: int, key_width: int
) -> tuple[Text, ...]:
    status = _cell(row.status.value, own)
    error = shorten_error(row.last_error, error_width) if row.last_error else ""
    if row.last_error and row.last_error.startswith(PLAN_READY):
        # A plan the agent answered with is what the row waits on, not an error.
        error, status = "", _cell("plan ready", done)
    return (
        _cell(short(row.idem, key_width)),
        status,
        _cell(row.model),
        _cell(row.handle or "—"),
        _cell(str(row.attempts), justify="right"),
        _cell(error, failed if error else ""),
    )
