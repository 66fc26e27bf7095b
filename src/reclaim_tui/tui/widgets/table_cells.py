"""What the ledger table shows of a row: its columns, and each row's cells as
plain one-line texts (the shape widgets/plain_table.py draws itself), coloured
by status from the running theme."""

from __future__ import annotations

from collections.abc import Mapping

from rich.style import Style
from rich.text import Text

from reclaim_tui.core.models import Row, Status
from reclaim_tui.tui.format import age, next_poll, short, shorten_error

__all__ = ["COLUMNS", "STATUS_COLOURS", "mark_cell", "row_cells", "status_styles"]

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
    return {s: Style.parse(theme_variables.get(v, "")) for s, v in STATUS_COLOURS.items()}


def mark_cell(marked: bool) -> Text:
    return Text("●" if marked else " ")


def row_cells(
    row: Row,
    now: float,
    marks: set[str],
    dead: set[str],
    styles: dict[Status, Style],
    error_width: int,
) -> list[Text]:
    """The row's cells, one for each of `COLUMNS` (the table shows those that fit)."""
    orphan = row.is_orphan(now, dead)
    when = "orphan" if orphan and not row.held else next_poll(row, now)
    error = shorten_error(row.last_error, error_width) if row.last_error else ""
    return [
        mark_cell(row.idem in marks),
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
