"""What sending jobs again would cost (the console's retry and recover ask
first): what a completed run of the row's model (or agent) cost in this
ledger, on average over its last AVERAGE_OVER completed runs; else the
price table's `typical` figure for that model, where the table has one;
else unknown.

Never the row's own last usage: a job sent again is a whole new run, and
the usage a failed or cancelled attempt left is a part of one (a Deep
Research run cancelled after minutes reports a fraction of what a finished
run costs).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from reclaim_tui.core.cost_totals import MEASURED, field_sql
from reclaim_tui.core.costs import USAGE_FIELDS, PriceTable, cost_of
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.schema import chunks

__all__ = ["AVERAGE_OVER", "Estimate", "estimate_resubmit"]


#: Completed runs averaged per model to estimate a run of that model.
AVERAGE_OVER = 500


@dataclass(frozen=True, slots=True)
class Estimate:
    """What sending `rows` jobs again would cost: `usd` over the rows it could
    estimate — `from_average` from their model's completed runs in this
    ledger (`runs` of them averaged, all models together), `from_typical`
    from the price table's typical figure — and `unknown`, not counted."""

    rows: int
    usd: float = 0.0
    from_average: int = 0
    runs: int = 0
    from_typical: int = 0
    unknown: int = 0

    @property
    def estimated(self) -> int:
        return self.from_average + self.from_typical


async def estimate_resubmit(ledger: Ledger, idems: Sequence[str], prices: PriceTable) -> Estimate:
    """The cost of sending `idems` again (keys not in the ledger count unknown)."""
    models: Counter[str] = Counter()
    for chunk in chunks(list(idems), 5000):
        for (model,) in await ledger.select(
            Sql(lambda d: f"SELECT model FROM jobs WHERE idem IN (SELECT value FROM {d.each()})"),
            [json.dumps(list(chunk))],
        ):
            models[str(model)] += 1
    estimate = Estimate(rows=len(idems), unknown=len(idems) - models.total())
    for model, count in models.items():
        average, runs = await _average_cost(ledger, model, prices)
        price = prices.price(model)
        if average is not None:
            estimate = replace(
                estimate,
                usd=estimate.usd + average * count,
                from_average=estimate.from_average + count,
                runs=estimate.runs + runs,
            )
        elif price is not None and price.typical is not None:
            estimate = replace(
                estimate,
                usd=estimate.usd + price.typical * count,
                from_typical=estimate.from_typical + count,
            )
        else:
            estimate = replace(estimate, unknown=estimate.unknown + count)
    return estimate


async def _average_cost(ledger: Ledger, model: str, prices: PriceTable) -> tuple[float | None, int]:
    """What a completed run of `model` cost on average in this ledger, and
    over how many runs; (None, 0) when none completed or it has no price."""
    if prices.price(model) is None:
        return None, 0
    names = ("input", "output", "thought", "cached", "tool_use")
    # Over rows that have counts, a missing field counting 0, as in cost_of.
    rows = await ledger.select(
        Sql(
            lambda d: (
                "SELECT COUNT(*), "
                + ", ".join(f"AVG(COALESCE({field_sql(n).of(d)}, 0))" for n in names)
                + " FROM (SELECT r.usage FROM jobs AS j JOIN results AS r ON r.job = j.id"
                f" WHERE j.status IN ('consumed', 'done') AND j.model = {d.p}"
                f" AND {MEASURED.of(d)} ORDER BY j.state_since DESC LIMIT {d.p}) AS r"
            )
        ),
        [model, AVERAGE_OVER],
    )
    if not rows or not rows[0][0]:
        return None, 0
    mean = {n: float(v or 0) for n, v in zip(names, rows[0][1:], strict=True)}
    usage = {USAGE_FIELDS[n]: v for n, v in mean.items()}
    return cost_of(usage, model, prices), int(rows[0][0])
