"""What sending jobs again would cost (the console's bulk retry and resubmit
ask first): each row's own last usage, else its model's recent average."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from reclaim_tui.core.cost_totals import MEASURED, field_sql
from reclaim_tui.core.costs import USAGE_FIELDS, PriceTable, cost_of
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.schema import chunks

__all__ = ["AVERAGE_OVER", "Estimate", "estimate_resubmit"]


#: Rows averaged per model to estimate a job that has no usage of its own.
AVERAGE_OVER = 500


@dataclass(frozen=True, slots=True)
class Estimate:
    """What sending `rows` jobs again would cost: `usd` over the rows it could
    estimate — from the row's own last usage, or its model's average over its
    last AVERAGE_OVER consumed rows — and how many it could not."""

    rows: int
    usd: float = 0.0
    from_usage: int = 0
    from_average: int = 0
    unknown: int = 0

    @property
    def estimated(self) -> int:
        return self.from_usage + self.from_average


async def estimate_resubmit(ledger: Ledger, idems: Sequence[str], prices: PriceTable) -> Estimate:
    """The cost of a bulk retry/resubmit of `idems` (keys not in the ledger count unknown)."""
    estimate = Estimate(rows=len(idems))
    without: dict[str, int] = defaultdict(int)
    found = 0
    for chunk in chunks(list(idems), 5000):
        for model, usage in await ledger.select(
            "SELECT j.model, r.usage FROM jobs AS j LEFT JOIN results AS r ON r.job = j.id"
            " WHERE j.idem IN (SELECT value FROM json_each(?))",
            [json.dumps(list(chunk))],
        ):
            found += 1
            usd = cost_of(_loads(usage), model, prices)
            if usd is None:
                without[model] += 1
            else:
                estimate = replace(
                    estimate, usd=estimate.usd + usd, from_usage=estimate.from_usage + 1
                )
    unknown = len(idems) - found
    for model, count in without.items():
        average = await _average_cost(ledger, model, prices)
        if average is None:
            unknown += count
        else:
            estimate = replace(
                estimate,
                usd=estimate.usd + average * count,
                from_average=estimate.from_average + count,
            )
    return replace(estimate, unknown=unknown)


def _loads(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


async def _average_cost(ledger: Ledger, model: str, prices: PriceTable) -> float | None:
    if prices.price(model) is None:
        return None
    names = ("input", "output", "thought", "cached", "tool_use")
    # Over rows that have counts, a missing field counting 0, as in cost_of.
    averages = ", ".join(f"AVG(COALESCE({field_sql(n)}, 0))" for n in names)
    rows = await ledger.select(
        f"SELECT COUNT(*), {averages} FROM (SELECT r.usage FROM jobs AS j"
        " JOIN results AS r ON r.job = j.id WHERE j.status = 'consumed' AND j.model = ?"
        f" AND {MEASURED} ORDER BY j.state_since DESC LIMIT ?) AS r",
        [model, AVERAGE_OVER],
    )
    if not rows or not rows[0][0]:
        return None
    mean = {n: float(v or 0) for n, v in zip(names, rows[0][1:], strict=True)}
    usage = {USAGE_FIELDS[n]: v for n, v in mean.items()}
    return cost_of(usage, model, prices)
