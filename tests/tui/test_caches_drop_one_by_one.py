"""The console's caches of cells and styles drop their oldest entry for each
one added when full, instead of emptying themselves whole (issue 39: the
console's keys at p99). The window that filled the cell cache freed its
8,192 texts at once, inside that key: the slowest tab and page keys were
those. Counted: how many entries one addition drops; nothing is timed."""

from __future__ import annotations

import itertools

from rich.style import Style

from reclaim_tui.tui.widgets import table_cells
from reclaim_tui.tui.widgets.line_paint import STYLES_KEPT, Styles


def _most_dropped_at_once(sizes: list[int]) -> int:
    """The most entries one addition took away (0: the cache only grew or held)."""
    return max(0, *(before + 1 - after for before, after in itertools.pairwise(sizes)))


def test_the_cell_cache_drops_its_oldest_cell_for_each_new_one() -> None:
    table_cells._cells.clear()
    sizes, texts = [], []
    for n in range(table_cells.CELLS_KEPT + 100):
        texts.append(table_cells._cell(f"cell {n}"))
        sizes.append(len(table_cells._cells))
    assert _most_dropped_at_once(sizes) <= 1, max(sizes) - sizes[-1]
    assert sizes[-1] == table_cells.CELLS_KEPT
    # The newest are kept (the same text again), the oldest were dropped.
    assert table_cells._cell(f"cell {table_cells.CELLS_KEPT + 99}") is texts[-1]
    assert ("cell 0", "", None) not in table_cells._cells
    table_cells._cells.clear()


def test_the_table_s_styles_drop_their_oldest_for_each_new_one() -> None:
    styles, pre, post = Styles(), Style(bold=True), Style(italic=True)
    sizes = []
    for n in range(STYLES_KEPT + 100):
        styles.text(pre, Style(color=f"color({n % 256})", link=f"#{n}"), post)
        sizes.append(len(styles.texts))
    assert _most_dropped_at_once(sizes) <= 1, max(sizes) - sizes[-1]
    assert sizes[-1] == STYLES_KEPT


def test_kept_holds_its_limit_and_drops_the_oldest() -> None:
    from reclaim_tui.tui.widgets.kept import Kept  # the class the caches above are made of

    kept: Kept[int, str] = Kept(3)
    assert [kept.keep(n, str(n)) for n in range(5)] == ["0", "1", "2", "3", "4"]
    assert list(kept.items()) == [(2, "2"), (3, "3"), (4, "4")]
