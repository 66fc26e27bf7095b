"""How the console prints keys, ages and times (pure functions)."""

from __future__ import annotations

import time

from reclaim_tui.core.models import ACTIVE_STATUSES, Row

__all__ = ["age", "clock_time", "next_poll", "short", "timestamp"]


def short(idem: str, width: int = 12) -> str:
    return idem if len(idem) <= width else idem[:width] + "…"


def age(seconds: float) -> str:
    """A compact duration: 42s, 7m12s, 3h04m, 2d05h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def next_poll(row: Row, now: float) -> str:
    """When the loop will look at this row again ('' for rows it never will)."""
    if row.status not in ACTIVE_STATUSES:
        return ""
    if row.held:
        return "held"
    wait = row.next_at - now
    return "due" if wait <= 0 else "in " + age(wait)


def timestamp(at: float | None) -> str:
    """UTC, so every operator (and every snapshot) reads the same time."""
    if at is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


def clock_time(at: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(at))
