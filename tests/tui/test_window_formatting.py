"""What a new window of the ledger table costs the UI thread, counted (no
test here times anything): a row shown again unchanged is not formatted
again (a tab or a window seen before, the refresh of the ages)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from reclaim_tui.tui.widgets import table_cells
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .test_table_render import NOW, TableApp, rows


def _counting(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[str]:
    """The first arguments `module.name` is called with, from now on."""
    calls: list[str] = []
    real: Callable[..., object] = getattr(module, name)

    def counting(text: str, *args: object) -> object:
        calls.append(text)
        return real(text, *args)

    monkeypatch.setattr(module, name, counting)
    return calls


async def test_a_row_shown_again_unchanged_is_not_formatted_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every row's cells were formatted at every window: its key cut, its
    error read by shorten_error's patterns, each of its cells looked up."""
    first, second = rows(100, "a"), rows(100, "b")
    app = TableApp()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(LedgerTable)
        table.show_rows(first, NOW, set())
        table.show_rows(second, NOW, set())
        await pilot.pause()
        keys_cut = _counting(monkeypatch, table_cells, "short")
        errors_read = _counting(monkeypatch, table_cells, "shorten_error")
        changed = replace(first[7], attempts=first[7].attempts + 1)
        table.show_rows([*first[:7], changed, *first[8:]], NOW + 1, set())  # back to the first
        assert keys_cut == [changed.idem]
        assert len(errors_read) == (1 if changed.last_error else 0)
        assert table.get_cell(changed.idem, "attempts").plain == str(changed.attempts)
        ages = table.get_cell(first[3].idem, "age").plain
        assert ages == table_cells.age(NOW + 1 - first[3].state_since)
