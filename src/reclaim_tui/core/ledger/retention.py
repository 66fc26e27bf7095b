"""Rows the API may already have forgotten.

The API keeps a stored interaction for a limited time — 55 days on the paid
tier, 1 day on the free tier (docs/design.md §6) — after which `get`
answers 404. A `submitted` row older than that, never collected, is a
result at risk: `status` and the console warn about them.

`attention` counts those with the other rows an operator should look at:
held because the interaction asks something (answer or cancel them),
polled although the API reports a status this version does not know, and
whose interaction answers 404 inside the retention (polled again through
`--gone-grace`, then held: no proof of loss, core/engine/polling.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.row_notes import ASKS, NOT_FOUND, PLAN_READY, UNKNOWN_STATUS

if TYPE_CHECKING:  # the CLI's flags read PAID_TIER_DAYS without the port
    from reclaim_tui.core.ledger.port import Ledger

__all__ = [
    "FREE_TIER_DAYS",
    "PAID_TIER_DAYS",
    "AtRisk",
    "Attention",
    "attention",
    "past_retention",
]

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
        Sql(
            lambda d: (
                "SELECT COUNT(*), MIN(submitted_at) FROM jobs"
                f" WHERE status = 'submitted' AND submitted_at < {d.p}"
            )
        ),
        [cutoff],
    )
    count, oldest = rows[0]
    return AtRisk(int(count), oldest)


@dataclass(frozen=True, slots=True)
class Attention:
    """Submitted rows an operator should look at."""

    past_retention: AtRisk
    #: held: their interaction requires action (`answer` or `cancel`)
    asking: int
    #: the API reported a status this version does not know (still polled)
    unknown_status: int
    #: their interaction answers 404 inside retention: polled again (grace)
    not_found: int = 0
    #: the same past `--gone-grace`: held for an operator (still polled rarely)
    not_found_held: int = 0
    #: collaborative planning: a plan waits for approval (`answer`)
    plans_ready: int = 0

    @property
    def any(self) -> bool:
        return bool(
            self.past_retention.count
            or self.asking
            or self.unknown_status
            or self.not_found
            or self.not_found_held
            or self.plans_ready
        )


async def attention(ledger: Ledger, retention_days: float) -> Attention:
    """One scan of the submitted rows (on the status index)."""
    at_risk = await past_retention(ledger, retention_days)
    rows = await ledger.select(
        Sql(
            lambda d: (
                "SELECT "
                + ", ".join(
                    f"COALESCE(SUM(CASE WHEN last_error {d.like} {d.p} || '{d.pct}'{also}"
                    " THEN 1 ELSE 0 END), 0)"
                    for also in ("", "", " AND held = 0", " AND held = 1", "")
                )
                + " FROM jobs WHERE status = 'submitted' AND last_error IS NOT NULL"
            )
        ),
        [ASKS, UNKNOWN_STATUS, NOT_FOUND, NOT_FOUND, PLAN_READY],
    )
    asking, unknown, not_found, not_found_held, plans = rows[0]
    return Attention(
        at_risk, int(asking), int(unknown), int(not_found), int(not_found_held), int(plans)
    )
