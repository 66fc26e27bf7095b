"""Rows the API may already have forgotten.

The API keeps a stored interaction for a limited time — 55 days on the paid
tier, 1 day on the free tier (docs/design.md §1) — after which `get`
answers 404. A `submitted` row older than that, never collected, is a
result at risk: `status` and the console warn about them.
"""

from __future__ import annotations

from dataclasses import dataclass

from reclaim_tui.core.ledger import Ledger

__all__ = ["FREE_TIER_DAYS", "PAID_TIER_DAYS", "AtRisk", "past_retention"]

PAID_TIER_DAYS = 55.0
FREE_TIER_DAYS = 1.0


@dataclass(frozen=True, slots=True)
class AtRisk:
    """Submitted rows older than the retention: how many, and the oldest's submit time."""

    count: int
    oldest_submitted_at: float | None


async def past_retention(ledger: Ledger, days: float) -> AtRisk:
    cutoff = ledger.clock.now() - days * 86400.0
    rows = await ledger.select(
        "SELECT COUNT(*), MIN(submitted_at) FROM jobs"
        " WHERE status = 'submitted' AND submitted_at < ?",
        [cutoff],
    )
    count, oldest = rows[0]
    return AtRisk(int(count), oldest)
