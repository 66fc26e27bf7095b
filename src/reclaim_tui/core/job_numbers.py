"""A jobs file's line read as JSON, every number in it range-checked where
it is read: no NaN or Infinity (they are no JSON and no API value), no
float past a double, no whole number past the API's 64-bit integers; and
no object that names a field twice (JSON keeps the last silently: a second
"key" or "input" would replace the first unseen)."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

__all__ = ["MAX_WHOLE", "load_line"]

#: The largest whole number a job's line may hold: the API's 64-bit integers.
MAX_WHOLE = 2**63 - 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a job can carry")


def _bounded_int(text: str) -> int:
    if len(text) > 20 or abs(number := int(text)) > MAX_WHOLE:
        raise ValueError(f"{text[:40]} is past the largest whole number a job can carry")
    return number


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is past the largest number a job can carry")
    return number


def _unique_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    twice = next(name for name, n in Counter(name for name, _ in pairs).items() if n > 1)
    raise ValueError(f"the name {twice[:60]!r} is given twice in one object: give it once")


def load_line(text: str) -> Any:
    """The JSON value of `text`: json.JSONDecodeError when it is no JSON,
    ValueError naming a number no job can carry or a name an object gives
    twice, RecursionError when nested too deeply."""
    return json.loads(
        text,
        object_pairs_hook=_unique_names,
        parse_constant=_no_constant,
        parse_float=_finite_float,
        parse_int=_bounded_int,
    )
