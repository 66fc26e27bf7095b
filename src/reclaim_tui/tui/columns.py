"""Which of the ledger table's columns are shown: those the operator chose
(settings.toml `columns`, or `:columns`), as many as the width holds.

At 80 columns the table showed the key, the status, the model and a cut
handle; the age, the attempts, the next poll and the error were off-screen.
Columns are now taken in order of use — what a row is,
how long it has been so, what happens next, what went wrong — and each goes
in only if it leaves the error column its minimum. They are drawn in the
table's own order. Wide enough for all (≥ 134), nothing changes."""

from __future__ import annotations

from collections.abc import Iterable

from reclaim_tui.config import COLUMN_NAMES

__all__ = [
    "BUDGET",
    "ERROR_MIN",
    "KEY_FROM",
    "KEY_SHORT",
    "PRIORITY",
    "error_width",
    "fit",
    "key_of",
    "key_width",
]

#: Each column's width on screen, padding included, as the layout counts it
#: (the model and handle hold typical names; their sum is the width every
#: column but the error took before, so a wide table is laid out as before).
BUDGET = {
    "mark": 3,
    "idem": 15,
    "status": 12,
    "model": 21,
    "handle": 24,
    "attempts": 5,
    "age": 14,
    "next": 11,
    "updated": 13,
}
#: Kept free when the handle (the last to go in, with a generous budget) is
#: not shown: the error's padding and the vertical scrollbar (2 + 2).
_RESERVE = 4
#: The error column's least width (its text is cut to it).
ERROR_MIN = 16
#: The key column's characters (more: cut with "…") up to `KEY_FROM` columns;
#: past it the key takes one more a column, up to the 63 a key may have: a
#: user's key names the result's files, and cut it told one job from another
#: by its first 12 characters only.
KEY_SHORT = 12
KEY_FROM = 140
#: Which column goes in first when not all fit.
PRIORITY = (
    "mark",
    "idem",
    "status",
    "age",
    "error",
    "attempts",
    "next",
    "model",
    "updated",
    "handle",
)
#: Shown whatever the width (when chosen): what a row is, and what went wrong.
_ALWAYS = frozenset({"mark", "idem", "status", "error"})
#: The names an operator uses (config.COLUMN_NAMES) → the table's column keys.
_KEYS = {"key": "idem"}


def key_of(name: str) -> str:
    return _KEYS.get(name, name)


def fit(width: int, chosen: Iterable[str] | None = None) -> frozenset[str]:
    """The column keys shown at `width`: the chosen ones (every one when
    None; the mark always) in PRIORITY order while the error keeps ERROR_MIN."""
    wanted = {key_of(n) for n in (COLUMN_NAMES if chosen is None else chosen)} | {"mark"}
    shown: set[str] = set()
    used = ERROR_MIN if "error" in wanted else 0
    for key in PRIORITY:
        if key not in wanted:
            continue
        cost = BUDGET.get(key, 0)
        if key in _ALWAYS or used + cost + (0 if key == "handle" else _RESERVE) <= width:
            shown.add(key)
            used += cost
    return frozenset(shown)


def error_width(width: int, shown: Iterable[str]) -> int:
    """What the error column gets: the rest of the width, at least ERROR_MIN.
    Its own padding and the vertical scrollbar come out of the handle's
    generous budget when the handle is shown, else out of the rest: the
    table never scrolls sideways."""
    shown = set(shown)
    reserve = 0 if "handle" in shown else _RESERVE
    wider_key = key_width(width) - KEY_SHORT if "idem" in shown else 0
    return max(ERROR_MIN, width - sum(BUDGET.get(k, 0) for k in shown) - reserve - wider_key)


def key_width(width: int) -> int:
    """The key column's characters at `width` (a longer key is cut with "…")."""
    return min(63, KEY_SHORT + max(0, width - KEY_FROM))
