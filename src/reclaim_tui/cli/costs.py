"""`reclaim-tui costs`: what the ledger's jobs cost, by status, model or day.

A command of its own module (cli/__init__.py registers it); it reads the
ledger only, never calls the API.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from reclaim_tui.bootstrap import open_ledger
from reclaim_tui.cli.common import count_of
from reclaim_tui.cli.options import options
from reclaim_tui.cli.tables import Column, text_table
from reclaim_tui.config import Settings
from reclaim_tui.core.cost_totals import CostFilter, CostRow, GroupBy, cost_totals, grand_total
from reclaim_tui.core.costs import PRICES_ENV, PriceTable, format_usd, load_prices
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError, LedgerError, ReclaimError

__all__ = ["costs", "format_costs"]


@click.command()
@options("db", "busy_timeout")
@click.option(
    "--by",
    type=click.Choice(["status", "model", "day"]),
    default="status",
    show_default=True,
    help="Group the totals by status, model (or agent), or UTC day.",
)
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(path_type=Path),
    envvar=PRICES_ENV,
    default=None,
    help=f"A JSON or TOML price table overriding the shipped one by name (env {PRICES_ENV}).",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([s.value for s in Status]),
    help="Only rows in this status (repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def costs(
    db: str,
    busy_timeout: float,
    by: GroupBy,
    prices_file: Path | None,
    statuses: Sequence[str],
    as_json: bool,
) -> None:
    """Tokens and USD spent, from the usage each stored interaction reports.

    Rows whose model the price table does not know are counted as unknown,
    never as free; rows without usage yet (not sent, in flight) cost nothing so far.
    """
    try:
        prices = load_prices(prices_file, environ={})
        where = CostFilter(statuses=frozenset(Status(s) for s in statuses))
        rows = asyncio.run(_totals(Settings(db=db, busy_timeout=busy_timeout), prices, by, where))
    except ReclaimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2 if isinstance(exc, ConfigError) else 4 if isinstance(exc, LedgerError) else 1)
    if as_json:
        # allow_nan=False: `Infinity` is not JSON (the numbers are made finite below)
        click.echo(json.dumps(_as_json(rows, prices, by), indent=2, allow_nan=False))
    else:
        click.echo(format_costs(rows, prices, by))


async def _totals(
    settings: Settings, prices: PriceTable, by: GroupBy, where: CostFilter
) -> list[CostRow]:
    async with open_ledger(settings, readonly=True, create=False) as ledger:
        return await cost_totals(ledger, prices, by=by, where=where)


def _as_json(rows: Sequence[CostRow], prices: PriceTable, by: str) -> dict[str, Any]:
    def one(row: CostRow) -> dict[str, Any]:
        return {
            "key": row.key,
            "rows": row.rows,
            "priced": row.priced,
            "unknown": row.unknown,
            "input_tokens": _finite(row.input_tokens),
            "output_tokens": _finite(row.output_tokens),
            "thought_tokens": _finite(row.thought_tokens),
            "cached_tokens": _finite(row.cached_tokens),
            # null when no row of the group has a known cost: unknown, not $0
            "usd": _finite(round(row.usd, 6)) if row.priced else None,
            "unknown_models": list(row.unknown_models),
        }

    return {
        "by": by,
        "prices": {"as_of": prices.as_of, "source": prices.source},
        "groups": [one(r) for r in rows],
        "total": one(grand_total(rows)),
    }


def _finite(value: float) -> float | None:
    """A number JSON can carry; None for a float past finite (usage the API
    reported as absurd, multiplied out to infinity). Integers are exact."""
    return value if isinstance(value, int) or math.isfinite(value) else None


def _cells(row: CostRow) -> tuple[object, ...]:
    tokens = (row.input_tokens, row.output_tokens, row.thought_tokens)
    return (
        row.key,
        row.rows,
        row.priced,
        row.unknown,
        *(f"{n:,}" for n in tokens),
        format_usd(row.usd) if row.priced else "unknown",
    )


def format_costs(rows: Sequence[CostRow], prices: PriceTable, by: str) -> str:
    """The text table: one line per group, the total, what is unknown."""
    columns: list[Column] = [(by, "left")]
    columns += [(name, "right") for name in ("rows", "priced", "unknown", "input", "output")]
    columns += [("thought", "right"), ("USD", "right")]
    total = grand_total(rows)
    cells = [_cells(row) for row in [*rows, total]]
    lines = [f"costs by {by} · prices as of {prices.as_of} ({prices.source})"]
    lines.append(text_table(columns, cells))
    waiting = total.rows - total.priced - total.unknown
    if waiting:
        lines.append(
            f"{count_of(waiting, 'row')} without a result yet (never sent, or in flight):"
            " not in the USD total, their cost is unknown until they finish."
        )
    if total.unknown:
        models = ", ".join(total.unknown_models) or "usage without token counts"
        lines.append(
            f"{total.unknown} {'row' if total.unknown == 1 else 'rows'} of unknown price"
            f" ({models}) {'is' if total.unknown == 1 else 'are'} not in the USD total;"
            f" add their prices with --prices FILE or ${PRICES_ENV}."
        )
    return "\n".join(lines)
