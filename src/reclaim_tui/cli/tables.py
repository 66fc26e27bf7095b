"""The CLI's text tables, laid out by Rich (which Textual brings): columns as
wide as their widest cell, numbers to the right, nothing cut, no colour.

A table is rendered to plain text at its own width, never the terminal's:
piped to a file or read by a script, it looks as it does on screen.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Literal

__all__ = ["Column", "text_table"]

#: A column's header and which side its cells keep to.
Column = tuple[str, Literal["left", "right"]]


def text_table(columns: Sequence[Column], rows: Iterable[Sequence[object]]) -> str:
    """The header line and one line per row, two spaces between columns,
    no trailing blanks."""
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, padding=(0, 1), header_style="")
    for header, justify in columns:
        table.add_column(header, justify=justify, no_wrap=True)
    for row in rows:
        table.add_row(*(str(cell) for cell in row))
    out = io.StringIO()
    # Wide enough never to fold a line; markup and highlighting off, so a
    # cell's `[` or a number is printed as given.
    console = Console(file=out, width=100_000, color_system=None, markup=False, highlight=False)
    console.print(table, crop=False)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())
