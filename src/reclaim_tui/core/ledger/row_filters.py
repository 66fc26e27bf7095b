"""The console filter's structured words (issue 25): labels, time ranges and
attempts, beside the free text and `status:`/`model:`/`error:` of
core/ledger/queries.py's RowFilter.

    label:team=docs   the job's label `team` is `docs` (label:team: has it)
    age>1h  age<10m   time in the current state (state_since)
    created>2d        created more than two days ago; created<1h; created:today
    updated<10m       changed in the last ten minutes; updated>1d; updated:today
    attempts>2        attempts=0, attempts<3, attempts:1

A time is relative to the clock when the page is read (a filter left on
keeps meaning "the last ten minutes"); `today` is since local midnight.
None of these has an index: each is a test on the rows the sort's index
walks, as `model:` and `error:` always were.

There is no `cost>…`: a row's cost is not stored. It is its stored usage
(JSON in `results`) priced by the price table, which lives in Python
(core/costs.py: per model, with long-context tiers, overridable by a file):
a filter would join every row walked to its result and price it in SQL,
with no index to stop early. The costs view (`$`) sums the filtered rows'.

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reclaim_tui.core.ledger.prune import parse_age

__all__ = ["KNOWN_WORDS", "Structured", "parse_word", "structured_sql"]

#: The `word:` prefixes the filter knows (said when it meets another).
KNOWN_WORDS = ("status", "model", "error", "label", "age", "created", "updated", "attempts")
_TIME_COLUMNS = {"age": "state_since", "created": "created_at", "updated": "updated_at"}
_WORD = re.compile(r"(?P<name>[A-Za-z_]+)(?P<op>>=|<=|>|<|=|:)(?P<value>.*)", re.DOTALL)
_LABEL_KEY = re.compile(r"[^\"\\\s=]+")


@dataclass(frozen=True, slots=True)
class Structured:
    """One structured word: `kind` label/time/attempts, its column or label
    key, its operator (>, <, >=, <=, =, or "today"/"has"), its value."""

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
        return None  # core/ledger/queries.py's own
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
        return Structured("time", _TIME_COLUMNS[name], op, parse_age(value))
    if name == "attempts":
        if not value.isdigit():
            raise ValueError(f"{token!r}: attempts is compared to a whole number (attempts>2)")
        return Structured("attempts", "attempts", "=" if op == ":" else op, int(value))
    if name == "cost":
        raise ValueError(
            "cost is not a filter (a row's cost is not stored: it is its usage priced by"
            " the price table); $ shows the costs of the rows the filter shows"
        )
    if op == ":" and value:
        hint = f" (a label? label:{name}={value})" if "=" not in value else ""
        raise ValueError(
            f"unknown filter word {name}:{hint} — the words are"
            f" {', '.join(w + ':' for w in KNOWN_WORDS[:4])} age, created, updated, attempts;"
            ' put text in quotes to search for it ("a:b")'
        )
    return None


def _midnight(now: float) -> float:
    local = datetime.fromtimestamp(now).astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def structured_sql(
    words: tuple[Structured, ...], now: float, dialect: str
) -> tuple[list[str], list[Any]]:
    """WHERE clauses of `words` (all must hold) and their parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    for word in words:
        if word.kind == "label":
            if dialect == "postgres":
                # A spec that is not JSON would fail the cast (and the page):
                # only a spec that names labels is read as JSON.
                value = "(CASE WHEN spec LIKE '%\"labels\"%' THEN spec::json -> 'labels' ->> ? END)"
            else:  # a spec that is not JSON has no labels (and fails no read)
                value = "(CASE WHEN json_valid(spec) THEN json_extract(spec, ?) END)"
            key = word.name if dialect == "postgres" else f'$.labels."{word.name}"'
            if word.op == "has":
                clauses.append(f"{value} IS NOT NULL")
                params.append(key)
            else:
                clauses.append(f"{value} = ?")
                params += [key, word.value]
        elif word.kind == "time":
            if word.op == "today":
                clauses.append(f"{word.name} >= ?")
                params.append(_midnight(now))
            else:
                # age>1h: the time is more than an hour ago, so the column is earlier.
                flipped = {">": "<", "<": ">", ">=": "<=", "<=": ">="}[word.op]
                clauses.append(f"{word.name} {flipped} ?")
                params.append(now - float(word.value))
        else:
            clauses.append(f"attempts {word.op} ?")
            params.append(word.value)
    return clauses, params
