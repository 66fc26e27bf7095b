"""What the ledger's jobs cost, from the usage each stored interaction reports.

A price table (USD per 1M tokens, per model and per agent) ships as dated
package data, `reclaim_tui/prices.json`; prices change, so a file given by
`--prices FILE` or `$RECLAIM_PRICES` (JSON or TOML, the same shape) replaces
its entries by name. Usage fields are the Interactions API's (google-genai's
`Usage`, DESIGN.md §6): `total_input_tokens` (cached part included),
`total_cached_tokens`, `total_output_tokens`, `total_thought_tokens` (priced
as output), `total_tool_use_tokens` (tool results fed back: priced as input).
A missing field counts 0; a usage with neither input nor output counts, or a
model the table does not know, has an **unknown** cost: counted apart, never
a silent 0.

Totals are summed by the database (`json_extract`, rewritten for PostgreSQL
by core/ledger/pg_sql.py), grouped by (key, model, long prompt): the price is linear
in each sum, so a million rows come back as a few groups.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.schema import chunks
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError

__all__ = [
    "PRICES_ENV",
    "USAGE_FIELDS",
    "CostFilter",
    "CostRow",
    "Estimate",
    "Price",
    "PriceTable",
    "Tokens",
    "cost_of",
    "cost_totals",
    "estimate_resubmit",
    "format_usd",
    "grand_total",
    "group_row",
    "load_prices",
    "usage_sums_sql",
]

PRICES_ENV = "RECLAIM_PRICES"
#: Our name → the usage field of the Interactions API.
USAGE_FIELDS = {
    "input": "total_input_tokens",
    "output": "total_output_tokens",
    "thought": "total_thought_tokens",
    "cached": "total_cached_tokens",
    "tool_use": "total_tool_use_tokens",
}
GroupBy = Literal["status", "model", "day"]
_RATES = ("input", "output", "cached_input", "long_input", "long_output", "long_cached_input")
#: Rows averaged per model to estimate a job that has no usage of its own.
AVERAGE_OVER = 500


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens; `long_*` above the table's long-context threshold."""

    input: float
    output: float
    cached_input: float | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached_input: float | None = None

    def rates(self, long: bool) -> tuple[float, float, float]:
        """(input, output, cached input) for a prompt that is `long` or not."""
        cached = self.cached_input if self.cached_input is not None else self.input
        if not long:
            return self.input, self.output, cached
        return (
            self.long_input if self.long_input is not None else self.input,
            self.long_output if self.long_output is not None else self.output,
            self.long_cached_input if self.long_cached_input is not None else cached,
        )


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by model or agent name, the date they were read, where from."""

    as_of: str
    prices: Mapping[str, Price]
    long_context_above: int = 200_000
    source: str = "built-in"

    def price(self, target: str) -> Price | None:
        return self.prices.get(target)


@dataclass(frozen=True, slots=True)
class Tokens:
    """Token counts of one usage (or a sum of them)."""

    input: int = 0
    output: int = 0
    thought: int = 0
    cached: int = 0
    tool_use: int = 0

    @classmethod
    def from_usage(cls, usage: Mapping[str, Any] | None) -> Tokens | None:
        """The counts of an API usage; None when it has neither input nor output."""
        if not isinstance(usage, Mapping):
            return None
        got = {ours: _count(usage.get(theirs)) for ours, theirs in USAGE_FIELDS.items()}
        if usage.get(USAGE_FIELDS["input"]) is None and usage.get(USAGE_FIELDS["output"]) is None:
            return None
        return cls(**got)

    def usd(self, price: Price, long: bool) -> float:
        rate_in, rate_out, rate_cached = price.rates(long)
        fresh = max(self.input - self.cached, 0) + self.tool_use
        paid = fresh * rate_in + self.cached * rate_cached + (self.output + self.thought) * rate_out
        return paid / 1_000_000


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return round(value)  # an average (estimate_resubmit) is rounded to whole tokens


def format_usd(usd: float) -> str:
    """Dollars with cents, or four decimals below a dollar (a short job costs
    fractions of a cent); less than that is said as such, not as $0.0000."""
    if 0 < usd < 0.00005:
        return "<$0.0001"
    return f"${usd:,.2f}" if usd >= 1 else f"${usd:.4f}"


def cost_of(usage: Mapping[str, Any] | None, model: str, prices: PriceTable) -> float | None:
    """USD of one interaction's usage on `model` (or agent); None: unknown
    (no usage counts, or a model the table does not price)."""
    tokens = Tokens.from_usage(usage)
    price = prices.price(model)
    if tokens is None or price is None:
        return None
    return tokens.usd(price, tokens.input > prices.long_context_above)


# -- the table ---------------------------------------------------------------------------
def load_prices(
    path: Path | None = None, *, environ: Mapping[str, str] | None = None
) -> PriceTable:
    """The shipped table, overridden by `path` (else `$RECLAIM_PRICES`, if set).
    A file that cannot be read or has the wrong shape: ConfigError naming it."""
    shipped = resources.files("reclaim_tui").joinpath("prices.json").read_text("utf-8")
    table = _table(json.loads(shipped), "built-in")
    env = os.environ if environ is None else environ
    if path is None and env.get(PRICES_ENV):
        path = Path(env[PRICES_ENV])
    if path is None:
        return table
    override = _table(_read(path), str(path), partial=True)
    merged = {**table.prices, **override.prices}
    return PriceTable(
        override.as_of or table.as_of,
        merged,
        override.long_context_above or table.long_context_above,
        str(path),
    )


#: A price table is a few KiB: a bigger file (or /dev/zero) is a mistake, not read whole.
MAX_PRICES_BYTES = 1024 * 1024
#: USD per 1M tokens above this is a typo (and its products would overflow to infinity).
MAX_RATE = 1_000_000.0


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_PRICES_BYTES + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"prices file {path}: cannot be read ({exc})") from None
    if len(raw) > MAX_PRICES_BYTES:
        raise ConfigError(f"prices file {path}: over {MAX_PRICES_BYTES:,} bytes")
    kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
    try:
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"prices file {path}: not valid {kind} ({exc})") from None
    except RecursionError:
        raise ConfigError(f"prices file {path}: {kind} nested too deeply to read") from None
    if not isinstance(data, dict):
        raise ConfigError(f"prices file {path}: expected an object with 'models' / 'agents'")
    return data


def _table(data: Mapping[str, Any], source: str, *, partial: bool = False) -> PriceTable:
    prices: dict[str, Price] = {}
    for section in ("models", "agents"):
        entries = data.get(section, {})
        if not isinstance(entries, Mapping):
            raise ConfigError(f"prices file {source}: '{section}' must be an object of names")
        for name, entry in entries.items():
            prices[str(name)] = _price(entry, f"prices file {source}: {section}.{name}")
    if not partial and not prices:
        raise ConfigError(f"prices file {source}: no prices")
    if partial and not prices and "as_of" not in data:
        raise ConfigError(f"prices file {source}: neither 'models' nor 'agents' given")
    as_of = data.get("as_of", "")
    if isinstance(as_of, date):  # TOML's bare 2027-01-05
        as_of = as_of.isoformat()
    above = data.get("long_context_above", 0)
    if not isinstance(as_of, str) or not isinstance(above, int) or above < 0:
        raise ConfigError(
            f"prices file {source}: 'as_of' must be a date string and"
            " 'long_context_above' a token count"
        )
    return PriceTable(as_of, prices, above, source)


def _price(entry: Any, where: str) -> Price:
    if not isinstance(entry, Mapping):
        raise ConfigError(f'{where}: expected an object like {{"input": 0.3, "output": 2.5}}')
    unknown = set(entry) - set(_RATES)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    for name in ("input", "output"):
        if name not in entry:
            raise ConfigError(f"{where}: '{name}' (USD per 1M tokens) is missing")
    rates: dict[str, float] = {}
    for name, value in entry.items():
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            # NaN or Infinity would poison every total (an int past a float: OverflowError)
            or not (isinstance(value, float) or abs(value) <= MAX_RATE)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_RATE
        ):
            huge = isinstance(value, int) and abs(value) > 10**30  # repr stops at 4,300 digits
            shown = "a huge number" if huge else repr(value)[:40]
            raise ConfigError(
                f"{where}.{name}: expected a finite number of USD per 1M tokens, from 0"
                f" to {MAX_RATE:,.0f}; got {shown}"
            )
        rates[name] = float(value)
    return Price(**rates)


# -- totals over the ledger ------------------------------------------------------------------
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


def _field_sql(name: str) -> str:
    return f"CAST(json_extract(r.usage, '$.{USAGE_FIELDS[name]}') AS BIGINT)"


_MEASURED = f"({_field_sql('input')} IS NOT NULL OR {_field_sql('output')} IS NOT NULL)"
_KEYS: dict[str, str] = {
    "status": "j.status",
    "model": "j.model",
    # UTC days since the epoch of when the result was stored (else created).
    "day": "CAST(COALESCE(r.stored_at, j.created_at) AS BIGINT) / 86400",
}


def usage_sums_sql() -> str:
    """Two columns, then the sums a group's `group_row` reads: is the prompt
    long (a `?`: the table's threshold), then COUNT(*), rows with usage, rows
    with counts, and the input, output, thought, cached and tool-use sums.
    Over `jobs AS j LEFT JOIN results AS r`."""
    sums = ", ".join(
        f"SUM({_field_sql(n)})" for n in ("input", "output", "thought", "cached", "tool_use")
    )
    return (
        f"CASE WHEN COALESCE({_field_sql('input')}, 0) > ? THEN 1 ELSE 0 END,"
        " COUNT(*), SUM(CASE WHEN r.usage IS NOT NULL THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN {_MEASURED} THEN 1 ELSE 0 END), {sums}"
    )


def _totals_sql(by: GroupBy, where: CostFilter) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if where.statuses:
        clauses.append("j.status IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(s.value for s in where.statuses)))
    if where.models:
        clauses.append("j.model IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(where.models)))
    when = "COALESCE(r.stored_at, j.created_at)"
    if where.since is not None:
        clauses.append(f"{when} >= ?")
        params.append(where.since)
    if where.until is not None:
        clauses.append(f"{when} < ?")
        params.append(where.until)
    if where.rows is not None:
        clauses.append(f"j.id IN ({where.rows[0]})")
        params += list(where.rows[1])
    sql = (
        f"SELECT {_KEYS[by]}, j.model, {usage_sums_sql()}"
        " FROM jobs AS j LEFT JOIN results AS r ON r.job = j.id"
        f" WHERE {' AND '.join(clauses) or 'TRUE'} GROUP BY 1, 2, 3"
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


# -- what a resubmission would cost ------------------------------------------------------------
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
    averages = ", ".join(f"AVG(COALESCE({_field_sql(n)}, 0))" for n in names)
    rows = await ledger.select(
        f"SELECT COUNT(*), {averages} FROM (SELECT r.usage FROM jobs AS j"
        " JOIN results AS r ON r.job = j.id WHERE j.status = 'consumed' AND j.model = ?"
        f" AND {_MEASURED} ORDER BY j.state_since DESC LIMIT ?) AS r",
        [model, AVERAGE_OVER],
    )
    if not rows or not rows[0][0]:
        return None
    mean = {n: float(v or 0) for n, v in zip(names, rows[0][1:], strict=True)}
    usage = {USAGE_FIELDS[n]: v for n, v in mean.items()}
    return cost_of(usage, model, prices)
