"""Walking a console view page by page, both ways (the reader's keyset paging)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reclaim_tui.core.ledger.console.page_sql import tie_column
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import Key, View
from reclaim_tui.core.models import Row

__all__ = ["display_key", "walk", "walk_back"]


async def display_key(reader: ConsoleReader, view: View) -> Callable[[Row], Key]:
    """A row's place in the view's order as the reader's engine sorts it:
    its sort values, then its id where that engine breaks the sort's ties by
    id (SQLite's time sorts), else its key."""
    key_of = view.key_of
    if tie_column(view.sort, reader._fast.dialect) != "id":
        return key_of
    connection: Any = reader._fast.connection
    async with connection.execute("SELECT idem, id FROM jobs") as cur:
        ids = {str(k): int(i) for k, i in await cur.fetchall()}
    return lambda row: (*key_of(row)[:-1], ids[row.idem])


async def walk(reader: ConsoleReader, view: View, size: int) -> list[str]:
    page = await reader.page(view, None, "from", size)
    seen = [r.idem for r in page.rows]
    while page.has_after:
        page = await reader.page(view, view.key_of(page.rows[-1]), "after", size)
        seen += [r.idem for r in page.rows]
    return seen


async def walk_back(reader: ConsoleReader, view: View, size: int) -> list[str]:
    page = await reader.page(view, None, "last", size)
    seen = [r.idem for r in page.rows]
    while page.has_before:
        page = await reader.page(view, view.key_of(page.rows[0]), "before", size)
        seen = [r.idem for r in page.rows] + seen
    return seen
