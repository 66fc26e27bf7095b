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

The totals over the ledger are core/cost_totals.py's; what a resubmission
would cost, core/cost_estimate.py's.
"""

from __future__ import annotations

import json
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

from reclaim_tui.errors import ConfigError

__all__ = [
    "PRICES_ENV",
    "USAGE_FIELDS",
    "Price",
    "PriceTable",
    "Tokens",
    "cost_of",
    "format_usd",
    "load_prices",
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
_RATES = (
    "input",
    "output",
    "cached_input",
    "long_input",
    "long_output",
    "long_cached_input",
    "typical",
)


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens; `long_*` above the table's long-context threshold."""

    input: float
    output: float
    cached_input: float | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached_input: float | None = None
    #: USD of a typical whole run (optional): what estimates use for a model
    #: or agent with no completed run in the ledger yet (core/cost_estimate.py)
    typical: float | None = None

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
#: The largest `long_context_above`: a whole number both engines hold and
#: compare with a sum of token counts exactly (a double's integers).
MAX_TOKENS = 2**53


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
    if not isinstance(as_of, str) or isinstance(above, bool) or not isinstance(above, int):
        raise ConfigError(
            f"prices file {source}: 'as_of' must be a date string and"
            " 'long_context_above' a token count"
        )
    if not 0 <= above <= MAX_TOKENS:
        shown = "a huge number" if abs(above) > 10**30 else str(above)  # str stops at 4,300 digits
        raise ConfigError(
            f"prices file {source}: 'long_context_above' must be a token count from 0"
            f" to {MAX_TOKENS:,}; got {shown}"
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
