"""A row's cost as SQL (the console filter's `cost>0.5`): its stored
usage priced by a price table, written out as one scalar expression, so the
database prices each row it walks. Nothing is stored in the ledger: no
column, no migration.

The price table is the one the console holds (the one `$` sums with: the
shipped table, overridden by `$RECLAIM_PRICES`), and it is data, never SQL
text: a table may name tens of thousands of models, and a name is whatever
a price file says. On SQLite its rows are put once in a temporary table of
the reading connection (`install_prices`: bound parameters, each rate the
exact double) and the expression joins it by model through its primary
key; on PostgreSQL the table is one bound JSON parameter, read once per
statement as `jsonb` and looked up by model (its rates are the shortest
decimal of each double, which PostgreSQL reads back as that double). The
expression's size does not grow with the table.

It is core/costs.py's arithmetic (`Tokens.usd`) in the same order on the
same doubles, over the token counts core/cost_totals.py sums (`field_sql`,
`MEASURED`), so a row's figure is the one `$` shows for it.

It is NULL — unknown, matched by no comparison — for a row with no stored
result (never sent, in flight), a usage with neither input nor output counts
(or, on SQLite, a usage that is not JSON), or a model the table does not
price. On PostgreSQL a usage that is not JSON, or a count that is not a
whole number (neither is ever written by the engine: a hand edit), fails
the read with a LedgerError that says so, as it fails `$`. A row has at
most one stored result (`results` is keyed by the job; a later result
replaces it): its cost is that interaction's usage. A continuation
(`previous`) is a row of its own, with its own cost.

Built for the ledger's dialect (core/ledger/dialect.py).
Pricing is the slowest test a filter makes of a row it walks (a lookup of
its result and a few JSON reads).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

from reclaim_tui.core.cost_totals import MEASURED, field_sql
from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.dialect import DIALECTS
from reclaim_tui.core.ledger.port import Ledger

__all__ = ["install_prices", "row_cost_sql"]

_COUNTS = ("input", "output", "thought", "cached", "tool_use")
#: The price table's columns on SQLite: the short and the long-context
#: rates of input, cached input and output, as Price.rates gives them.
_RATES = ("i_s", "o_s", "c_s", "i_l", "o_l", "c_l")
_TABLE = "temp.reclaim_prices"
#: Rows per INSERT: 7 parameters each, under SQLite's 32,766 a statement.
_CHUNK = 4000
#: The table each SQLite connection holds, and one install at a time on it.
_installed: weakref.WeakKeyDictionary[Ledger, PriceTable] = weakref.WeakKeyDictionary()
_locks: weakref.WeakKeyDictionary[Ledger, asyncio.Lock] = weakref.WeakKeyDictionary()


def _rows(prices: PriceTable) -> list[tuple[Any, ...]]:
    return [
        (name, *price.rates(False), *price.rates(True)) for name, price in prices.prices.items()
    ]


async def install_prices(ledger: Ledger, prices: PriceTable) -> None:
    """Put `prices` where `row_cost_sql`'s expression reads them on SQLite:
    a temporary table of `ledger`'s connection (a read-only one may hold
    it), filled once per table; PostgreSQL needs nothing."""
    if ledger.dialect == "postgres" or _installed.get(ledger) is prices:
        return
    lock = _locks.setdefault(ledger, asyncio.Lock())
    async with lock:
        if _installed.get(ledger) is prices:
            return
        columns = ", ".join(f"{c} REAL NOT NULL" for c in _RATES)
        await ledger.select(
            f"CREATE TEMP TABLE IF NOT EXISTS reclaim_prices (model TEXT PRIMARY KEY, {columns})"
        )
        await ledger.select(f"DELETE FROM {_TABLE}")
        rows = _rows(prices)
        for at in range(0, len(rows), _CHUNK):
            chunk = rows[at : at + _CHUNK]
            values = ", ".join(["(?, ?, ?, ?, ?, ?, ?)"] * len(chunk))
            await ledger.select(
                f"INSERT INTO {_TABLE} VALUES {values}", [v for row in chunk for v in row]
            )
        _installed[ledger] = prices


#: The JSON of the last table `_pg_table` wrote (a page read asks again and again).
_last_json: list[tuple[PriceTable, str]] = []


def _pg_table(prices: PriceTable) -> str:
    """`prices` as the JSON parameter PostgreSQL looks models up in."""
    if _last_json and _last_json[0][0] is prices:
        return _last_json[0][1]
    text = json.dumps({row[0]: list(row[1:]) for row in _rows(prices)}, allow_nan=False)
    _last_json[:] = [(prices, text)]
    return text


def _usd(long: bool) -> str:
    """Tokens.usd over the token columns of `t` and the rates of `p`, in its
    order of operations."""
    tier = "l" if long else "s"
    fresh = "(CASE WHEN t.i - t.c > 0 THEN t.i - t.c ELSE 0 END + t.u)"
    paid = f"{fresh} * p.i_{tier} + t.c * p.c_{tier} + (t.o + t.h) * p.o_{tier}"
    return f"({paid}) / 1000000"


def _pg_rates(job: str) -> str:  # PostgreSQL only: psycopg's marker
    """The rates of `job`'s model from the JSON parameter, a row or none."""
    rates = ", ".join(
        f"CAST(q.r ->> {n} AS DOUBLE PRECISION) AS {name}" for n, name in enumerate(_RATES)
    )
    return (
        f"(SELECT {rates} FROM (SELECT (SELECT CAST(%s AS JSONB)) -> {job}.model AS r) AS q"
        " WHERE q.r IS NOT NULL)"
    )


def row_cost_sql(prices: PriceTable, dialect: str, job: str = "jobs") -> tuple[str, list[Any]]:
    """A scalar SQL expression of the USD cost of the `job` row in scope (a
    `jobs` row, by its `id` and `model`) at `prices`, NULL when unknown, and
    its parameters. On SQLite `install_prices` must have put `prices` on the
    connection that runs it."""
    if not prices.prices:
        return "NULL", []
    d = DIALECTS[dialect]
    # A usage that is not JSON would fail json_extract (and the page): on
    # SQLite it counts as no usage; PostgreSQL has no test before its cast.
    usage = "x.usage" if dialect == "postgres" else "CASE WHEN json_valid(x.usage) THEN x.usage END"
    counts = ", ".join(
        f"COALESCE({field_sql(n).of(d)}, 0) AS {alias}"
        for n, alias in zip(_COUNTS, ("i", "o", "h", "c", "u"), strict=True)
    )
    tokens = (
        f"SELECT {counts} FROM (SELECT {usage} AS usage FROM results AS x"
        f" WHERE x.job = {job}.id) AS r WHERE {MEASURED.of(d)}"
    )
    cost = f"CASE WHEN t.i > {d.p} THEN {_usd(True)} ELSE {_usd(False)} END"
    params: list[Any] = [prices.long_context_above]
    if dialect == "postgres":
        params.append(_pg_table(prices))
        return f"(SELECT {cost} FROM ({tokens}) AS t, {_pg_rates(job)} AS p)", params
    prices_of = f"{_TABLE} AS p ON p.model = {job}.model"
    return f"(SELECT {cost} FROM ({tokens}) AS t JOIN {prices_of})", params
