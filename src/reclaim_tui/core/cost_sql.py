"""A row's cost as SQL (the console filter's `cost>0.5`, issue 25): its stored
usage priced by a price table, written out as one scalar expression, so the
database prices each row it walks. Nothing is stored: no column, no migration.

The expression is generated from the PriceTable the console holds (the one
`$` sums with: the shipped table, overridden by `$RECLAIM_PRICES`): a CASE
branch per model or agent, its long-context rates above the table's
threshold. It is core/costs.py's arithmetic (`Tokens.usd`) in the same order
on the same doubles — each rate is written as an exact binary fraction, as
SQLite's decimal literals are not always correctly rounded — over the token
counts core/cost_totals.py sums (`field_sql`, `MEASURED`), so a row's figure
is the one `$` shows for it.

It is NULL — unknown, matched by no comparison — for a row with no stored
result (never sent, in flight), a usage with neither input nor output counts
(or, on SQLite, a usage that is not JSON), or a model the table does not
price. On PostgreSQL a usage that is not JSON, or a count that is not a
whole number (neither is ever written by the engine: a hand edit), fails
the read with a LedgerError that says so, as it fails `$`. A row has at
most one stored result (`results` is keyed by the job; a later result
replaces it): its cost is that interaction's usage. A continuation
(`previous`) is a row of its own, with its own cost.

Written in SQLite's SQL; core/ledger/pg_sql.py rewrites `json_extract`.
Pricing is the slowest test a filter makes of a row it walks (a lookup of
its result and a few JSON reads): on SQLite some 8 µs a row, against 1 µs
for `attempts>2` (100,000 rows walked without a match: 0.8 s against 0.09 s,
2-core box at a load of 7).
"""

from __future__ import annotations

from typing import Any

from reclaim_tui.core.cost_totals import MEASURED, field_sql
from reclaim_tui.core.costs import Price, PriceTable

__all__ = ["row_cost_sql"]

_COUNTS = ("input", "output", "thought", "cached", "tool_use")


def _real(value: float) -> str:
    """`value` as SQL that both engines read as exactly this double."""
    if value == int(value) and abs(value) < 2**53:
        return f"CAST({int(value)} AS DOUBLE PRECISION)"
    top, bottom = value.as_integer_ratio()  # bottom: a power of two
    parts = [f"CAST({top} AS DOUBLE PRECISION)"]
    while bottom > 1:  # each step divides exactly (by at most 2**62, a BIGINT)
        step = min(bottom, 2**62)
        parts.append(f"CAST({step} AS DOUBLE PRECISION)")
        bottom //= step
    return "(" + " / ".join(parts) + ")"


def _usd(price: Price, long: bool) -> str:
    """Tokens.usd over the token columns of `t`, in its order of operations."""
    rate_in, rate_out, rate_cached = (_real(r) for r in price.rates(long))
    fresh = "(CASE WHEN t.i - t.c > 0 THEN t.i - t.c ELSE 0 END + t.u)"
    paid = f"{fresh} * {rate_in} + t.c * {rate_cached} + (t.o + t.h) * {rate_out}"
    return f"({paid}) / 1000000"


def row_cost_sql(prices: PriceTable, dialect: str, job: str = "jobs") -> tuple[str, list[Any]]:
    """A scalar SQL expression of the USD cost of the `job` row in scope (a
    `jobs` row, by its `id` and `model`) at `prices`, NULL when unknown, and
    its parameters (the model names, each bound)."""
    params: list[Any] = []
    branches: list[str] = []
    for name, price in prices.prices.items():
        when = "?"  # a name from a price file is never SQL text
        params.append(name)
        short, long = _usd(price, False), _usd(price, True)
        then = short if short == long else (
            f"CASE WHEN t.i > {prices.long_context_above} THEN {long} ELSE {short} END"
        )  # fmt: skip
        branches.append(f"WHEN {when} THEN {then}")
    if not branches:
        return "NULL", []
    # A usage that is not JSON would fail json_extract (and the page): on
    # SQLite it counts as no usage; PostgreSQL has no test before its cast.
    usage = "x.usage" if dialect == "postgres" else "CASE WHEN json_valid(x.usage) THEN x.usage END"
    counts = ", ".join(
        f"COALESCE({field_sql(n)}, 0) AS {alias}"
        for n, alias in zip(_COUNTS, ("i", "o", "h", "c", "u"), strict=True)
    )
    tokens = (
        f"SELECT {counts} FROM (SELECT {usage} AS usage FROM results AS x"
        f" WHERE x.job = {job}.id) AS r WHERE {MEASURED}"
    )
    return f"(SELECT CASE {job}.model {' '.join(branches)} END FROM ({tokens}) AS t)", params
