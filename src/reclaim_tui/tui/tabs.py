"""The table's tabs: one per status, "All", and the derived orphans (rows
whose lease holder is gone). keymap.py binds a number key to each."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TABS", "TabSpec"]


@dataclass(frozen=True, slots=True)
class TabSpec:
    id: str
    label: str
    status: str | None  # a Status value; None for "all" and the derived orphans
    orphans: bool = False
    #: The label in a narrow terminal (80 columns hold all eight tabs).
    short: str = ""


TABS: tuple[TabSpec, ...] = (
    TabSpec("all", "All", None, short="All"),
    TabSpec("reserving", "reserving", "reserving", short="resv"),
    TabSpec("orphans", "orphans", None, orphans=True, short="orph"),
    TabSpec("submitted", "submitted", "submitted", short="subm"),
    TabSpec("done", "done (unconsumed)", "done", short="done"),
    TabSpec("consumed", "consumed", "consumed", short="cons"),
    TabSpec("failed", "failed", "failed", short="fail"),
    TabSpec("cancelled", "cancelled", "cancelled", short="canc"),
)
