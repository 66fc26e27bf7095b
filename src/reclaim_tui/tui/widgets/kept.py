"""`Kept`: a cache of at most so many entries that, when full, drops its
oldest entry for each one added.

The console's caches of cells, styles and lines (table_cells.py,
line_paint.py, line_rows.py) used to be emptied whole when full: the key
that filled one freed thousands of texts or lines at once, and that key
was among the slowest. Dropped one by one, the same freeing is spread over
the keys that add entries."""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

__all__ = ["Kept"]

K = TypeVar("K")
V = TypeVar("V")


class Kept(OrderedDict[K, V]):
    """At most `limit` entries; `keep` drops the oldest one first when full."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def keep(self, key: K, value: V) -> V:
        """Add `value` under `key` (returned, for `x = kept.keep(k, make())`)."""
        if len(self) >= self.limit:
            self.popitem(last=False)
        self[key] = value
        return value
