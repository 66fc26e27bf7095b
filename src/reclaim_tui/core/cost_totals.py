"""What the ledger's jobs cost, summed: per status, model (or agent) or UTC day,
over the rows a CostFilter keeps (the prices and a usage's tokens: core/costs.py).

Totals are summed by the database (a usage's token counts read as members of
its JSON, in each engine's SQL: core/ledger/dialect.py), grouped by (key,
model, long prompt): the price is linear in each sum, so a million rows come
back as a few groups.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from reclaim_tui.core.costs import USAGE_FIELDS, PriceTable, Tokens
from reclaim_tui.core.ledger.dialect import Sql, joined
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Status

__all__ = [
    "MEASURED",
    "CostFilter",
    "CostRow",
    "GroupBy",
    "cost_totals",
    "field_sql",
    "grand_total",
    "group_row",
    "usage_sums_sql",
]

GroupBy = Literal["status", "model", "day"]


@dataclass(frozen=True, slots=True)
class CostFilter:
    """Which rows count: statuses (empty: all), models (empty: all), the
    time their result was stored (else created) in [since, until), and `rows`:
    a `SELECT id FROM jobs …` with its parameters (the console's view: its
    tab, filter text and tokens; `ConsoleReader.view_ids_sql`)."""

    statuses: frozenset[Status] = frozenset()
    models: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    rows: tuple[str, tuple[Any, ...]] | None = None


@dataclass(frozen=True, slots=True)
class CostRow:
    """One group's totals. `rows` are the group's jobs: `priced` have a known
    cost (in `usd`), `unknown` have usage the table cannot price, the rest
    have no usage yet (never sent, in flight)."""

    key: str
    rows: int = 0
    priced: int = 0
    unknown: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thought_tokens: int = 0
    cached_tokens: int = 0
    usd: float = 0.0
    unknown_models: tuple[str, ...] = field(default=())

    def plus(self, other: CostRow) -> CostRow:
        return CostRow(
            self.key,
            self.rows + other.rows,
            self.priced + other.priced,
            self.unknown + other.unknown,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.thought_tokens + other.thought_tokens,
            self.cached_tokens + other.cached_tokens,
            self.usd + other.usd,
            tuple(sorted(set(self.unknown_models) | set(other.unknown_models))),
        )


def grand_total(rows: Sequence[CostRow], key: str = "total") -> CostRow:
    """Every group added up."""
    out = CostRow(key)
    for row in rows:
        out = out.plus(row)
    return out


def field_sql(name: str) -> Sql:
    """The token count `name` of the usage `r.usage` (NULL when it has none)."""
    return Sql(lambda d: f"CAST({d.member('r.usage', USAGE_FIELDS[name])} AS BIGINT)")


MEASURED = Sql(
    lambda d: f"({field_sql('input').of(d)} IS NOT NULL OR {field_sql('output').of(d)} IS NOT NULL)"
)
_KEYS: dict[str, str] = {
    "status": "j.status",
    "model": "j.model",
    # UTC days since the epoch of when the result was stored (else created).
    "day": "CAST(COALESCE(r.stored_at, j.created_at) AS BIGINT) / 86400",
}


def usage_sums_sql() -> Sql:
    """Two columns, then the sums a group's `group_row` reads: is the prompt
    long (a `?`: the table's threshold), then COUNT(*), rows with usage, rows
    with counts, and the input, output, thought, cached and tool-use sums.
    Over `jobs AS j LEFT JOIN results AS r`."""
    names = ("input", "output", "thought", "cached", "tool_use")
    return Sql(
        lambda d: (
            f"CASE WHEN COALESCE({field_sql('input').of(d)}, 0) > {d.p} THEN 1 ELSE 0 END,"
            " COUNT(*), SUM(CASE WHEN r.usage IS NOT NULL THEN 1 ELSE 0 END),"
            f" SUM(CASE WHEN {MEASURED.of(d)} THEN 1 ELSE 0 END), "
            + ", ".join(f"SUM({field_sql(n).of(d)})" for n in names)
        )
    )


def _totals_sql(by: GroupBy, where: CostFilter) -> tuple[Sql, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if where.statuses:
        clauses.append(Sql(lambda d: f"j.status IN (SELECT value FROM {d.each()})"))
        params.append(json.dumps(sorted(s.value for s in where.statuses)))
    if where.models:
        clauses.append(Sql(lambda d: f"j.model IN (SELECT value FROM {d.each()})"))
        params.append(json.dumps(list(where.models)))
    when = "COALESCE(r.stored_at, j.created_at)"
    if where.since is not None:
        clauses.append(Sql(lambda d: f"{when} >= {d.p}"))
        params.append(where.since)
    if where.until is not None:
        clauses.append(Sql(lambda d: f"{when} < {d.p}"))
        params.append(where.until)
    if where.rows is not None:
        # The view's own statement, already in the ledger's dialect.
        clauses.append("j.id IN (" + where.rows[0] + ")")
        params += list(where.rows[1])
    sql = (
        f"SELECT {_KEYS[by]}, j.model, "
        + usage_sums_sql()
        + " FROM jobs AS j LEFT JOIN results AS r ON r.job = j.id WHERE "
        + (joined(" AND ", clauses) if clauses else "TRUE")
        + " GROUP BY 1, 2, 3"
    )
    return sql, params


async def cost_totals(
    ledger: Ledger,
    prices: PriceTable,
    *,
    by: GroupBy = "status",
    where: CostFilter | None = None,
) -> list[CostRow]:
    """Totals per status, model (or agent) or UTC day (YYYY-MM-DD), in that
    order: statuses as the state machine lists them, models by cost, days oldest first."""
    sql, params = _totals_sql(by, where or CostFilter())
    groups: dict[str, CostRow] = {}
    for values in await ledger.select(sql, [prices.long_context_above, *params]):
        key = _key_text(by, values[0])
        row = group_row(key, str(values[1]), bool(values[2]), values[3:], prices)
        groups[key] = groups[key].plus(row) if key in groups else row
    return _ordered(by, groups)


def group_row(
    key: str, model: str, long: bool, values: Sequence[Any], prices: PriceTable
) -> CostRow:
    """A CostRow from one group's `usage_sums_sql` columns (after the long flag)."""
    rows, with_usage, measured, *sums = (int(v or 0) for v in values)
    tokens = Tokens(sums[0], sums[1], sums[2], sums[3], sums[4])
    price = prices.price(model)
    if price is None:
        unknown, priced, usd = with_usage, 0, 0.0
    else:
        unknown, priced, usd = with_usage - measured, measured, tokens.usd(price, long)
    missing = (model,) if price is None and with_usage else ()
    return CostRow(
        key, rows, priced, unknown, tokens.input, tokens.output, tokens.thought,
        tokens.cached, usd, missing,
    )  # fmt: skip


def _key_text(by: GroupBy, value: Any) -> str:
    if by == "day":
        return datetime.fromtimestamp(int(value) * 86400, UTC).date().isoformat()
    return str(value)


def _ordered(by: GroupBy, groups: dict[str, CostRow]) -> list[CostRow]:
    if by == "status":
        order = {s.value: n for n, s in enumerate(Status)}
        return sorted(groups.values(), key=lambda r: (order.get(r.key, 99), r.key))
    if by == "model":
        return sorted(groups.values(), key=lambda r: (-r.usd, r.key))
    return sorted(groups.values(), key=lambda r: r.key)
