"""The console filter's structured words: labels, time ranges,
attempts and cost, beside the free text and `status:`/`model:`/`error:` of
core/ledger/console/queries.py's RowFilter.

    label:team=docs   the job's label `team` is `docs` (label:team: has it)
    age>1h  age<10m   time in the current state (state_since)
    created>2d        created more than two days ago; created<1h; created:today
    updated<10m       changed in the last ten minutes; updated>1d; updated:today
    attempts>2        attempts=0, attempts<3, attempts:1
    cost>0.5          US dollars, as `$` prices the row: cost<0.01, cost>=1, cost<=$2

A time is relative to the clock when the page is read (a filter left on
keeps meaning "the last ten minutes"); `today` is since local midnight.
None of these has an index: each is a test on the rows the sort's index
walks, as `model:` and `error:` always were.

A row's cost is not stored: it is its stored usage (JSON in `results`)
priced by the price table the console holds (the one `$` uses: shipped,
overridden by `$RECLAIM_PRICES`; per model, long-context tiers), in SQL
generated from that table (core/cost_sql.py), on both engines: each row
walked is joined to its result by its key and priced. A row whose cost is
unknown — no stored result yet, a usage without token counts, a model the
table does not price — matches no `cost` word, neither `cost<X` nor
`cost>X` (`$` counts those rows apart). A row has at most one stored result
(a later one replaces it): `cost` is that interaction's; a continuation is a
row of its own. A cost is a number of dollars, 0 or more (`cost>abc`,
`cost:1`, `cost>-1` are refused, saying why), at most a trillion; `attempts`
is a whole number a database column holds (up to 2**31-1).

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from reclaim_tui.core.ledger.dialect import DIALECTS

if TYPE_CHECKING:
    from reclaim_tui.core.costs import PriceTable

__all__ = ["KNOWN_WORDS", "Structured", "parse_word", "structured_sql"]

#: The `word:` prefixes the filter knows (said when it meets another).
KNOWN_WORDS = (
    "status", "model", "error", "label", "age", "created", "updated", "attempts", "cost",
)  # fmt: skip
_TIME_COLUMNS = {"age": "state_since", "created": "created_at", "updated": "updated_at"}
_WORD = re.compile(r"(?P<name>[A-Za-z_]+)(?P<op>>=|<=|>|<|=|:)(?P<value>.*)", re.DOTALL)
_LABEL_KEY = re.compile(r"[^\"\\\s=]+")
#: Dollars: 0.5, .5, 2, $1.25 (no sign, no exponent, no inf/nan).
_USD = re.compile(r"\$?(?P<usd>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_WHOLE = re.compile(r"[0-9]+")
#: The largest `attempts` a filter compares with: the column's range on
#: both engines (PostgreSQL's INTEGER); past it a database refuses the number.
MAX_ATTEMPTS = 2**31 - 1
#: The largest `cost` a filter compares with: a trillion dollars (past it a
#: number of dollars is no price; a longer figure is no double).
MAX_USD = 1e12


@dataclass(frozen=True, slots=True)
class Structured:
    """One structured word: `kind` label/time/attempts/cost, its column or
    label key, its operator (>, <, >=, <=, =, or "today"/"has"), its value."""

    kind: str
    name: str
    op: str
    value: Any


def parse_word(token: str) -> Structured | None:
    """The structured word `token` is (None: not one of these); ValueError
    says what is wrong with it, or that its `word:` prefix is unknown."""
    found = _WORD.fullmatch(token)
    if found is None:
        return None
    name, op, value = found["name"].lower(), found["op"], found["value"]
    if name in ("status", "model", "error"):
        return None  # core/ledger/console/queries.py's own
    if name == "label":
        if op != ":":
            raise ValueError(f"{token!r}: a label filter is label:KEY=VALUE (or label:KEY)")
        key, eq, wanted = value.partition("=")
        if not _LABEL_KEY.fullmatch(key) or (eq and not wanted):
            raise ValueError(f"{token!r}: a label filter is label:KEY=VALUE (or label:KEY)")
        return Structured("label", key, "=" if eq else "has", wanted)
    if name in _TIME_COLUMNS:
        if op in (":", "=") and value.lower() == "today":
            return Structured("time", _TIME_COLUMNS[name], "today", 0.0)
        if op not in (">", "<", ">=", "<="):
            raise ValueError(f"{token!r}: a time filter is {name}>1h, {name}<10m or {name}:today")
        # Here: `status` reads views without pruning's modules (start-up).
        from reclaim_tui.core.ledger.prune import parse_age

        return Structured("time", _TIME_COLUMNS[name], op, parse_age(value))
    if name == "attempts":
        if not _WHOLE.fullmatch(value):
            raise ValueError(f"{token!r}: attempts is compared to a whole number (attempts>2)")
        if len(value.lstrip("0")) > 12 or int(value) > MAX_ATTEMPTS:
            raise ValueError(f"{token!r}: attempts is compared to a number up to {MAX_ATTEMPTS}")
        return Structured("attempts", "attempts", "=" if op == ":" else op, int(value))
    if name == "cost":
        return Structured("cost", "usd", op, _usd(token, op, value))
    if op == ":" and value:
        hint = f" (a label? label:{name}={value})" if "=" not in value else ""
        raise ValueError(
            f"unknown filter word {name}:{hint} — the words are"
            f" {', '.join(w + ':' for w in KNOWN_WORDS[:4])} age, created, updated, attempts,"
            " cost;"
            ' put text in quotes to search for it ("a:b")'
        )
    return None


def _usd(token: str, op: str, value: str) -> float:
    """The dollars of a `cost` word (ValueError: what is wrong with it)."""
    if op not in (">", "<", ">=", "<="):
        raise ValueError(f"{token!r}: a cost filter is cost>0.5, cost<0.01, cost>=1 or cost<=2")
    found = _USD.fullmatch(value)
    if found is None:
        raise ValueError(
            f"{token!r}: a cost is a number of US dollars, 0 or more (cost>0.5, cost<=$2)"
        )
    usd = float(found["usd"])
    if usd > MAX_USD:
        raise ValueError(f"{token!r}: a cost is at most {MAX_USD:,.0f} US dollars")
    return usd


def _midnight(now: float) -> float:
    local = datetime.fromtimestamp(now).astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def structured_sql(
    words: tuple[Structured, ...], now: float, dialect: str, prices: PriceTable | None = None
) -> tuple[list[str], list[Any]]:
    """WHERE clauses of `words` (all must hold) and their parameters; a
    `cost` word is priced at `prices` (ValueError without a table)."""
    d = DIALECTS[dialect]
    clauses: list[str] = []
    params: list[Any] = []
    for word in words:
        if word.kind == "label":
            if dialect == "postgres":
                # A spec that is not JSON would fail the cast (and the page):
                # only a spec that names labels is read as JSON. LIKE, not
                # ILIKE: JSON's keys are case-sensitive, and "LABELS" in a
                # spec that is not JSON must not reach the cast.
                value = (
                    f"(CASE WHEN spec LIKE '{d.pct}\"labels\"{d.pct}'"
                    f" THEN spec::json -> 'labels' ->> {d.p} END)"
                )
            else:  # a spec that is not JSON has no labels (and fails no read)
                value = f"(CASE WHEN json_valid(spec) THEN json_extract(spec, {d.p}) END)"
            key = word.name if dialect == "postgres" else f'$.labels."{word.name}"'
            if word.op == "has":
                clauses.append(f"{value} IS NOT NULL")
                params.append(key)
            else:
                clauses.append(f"{value} = {d.p}")
                params += [key, word.value]
        elif word.kind == "time":
            if word.op == "today":
                clauses.append(f"{word.name} >= {d.p}")
                params.append(_midnight(now))
            else:
                # age>1h: the time is more than an hour ago, so the column is earlier.
                flipped = {">": "<", "<": ">", ">=": "<=", "<=": ">="}[word.op]
                clauses.append(f"{word.name} {flipped} {d.p}")
                params.append(now - float(word.value))
        elif word.kind == "cost":
            if prices is None:
                raise ValueError("a cost filter needs the price table, and it could not be read")
            # Here: the price table's module (importlib.resources, tempfile…) is
            # not `status`'s start-up cost.
            from reclaim_tui.core.cost_sql import row_cost_sql

            cost, cost_params = row_cost_sql(prices, dialect)
            clauses.append(f"{cost} {word.op} {d.p}")
            params += [*cost_params, float(word.value)]
        else:
            clauses.append(f"attempts {word.op} {d.p}")
            params.append(word.value)
    return clauses, params
