"""Walking a console view page by page, both ways (the reader's keyset paging)."""

from __future__ import annotations

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import View

__all__ = ["walk", "walk_back"]


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
