"""A batch's rows as ONE JSON parameter, read on the server by
`json_to_recordset` / `json_array_elements_text`.

psycopg dumps an array parameter element by element in Python (each
string through the ledger's own dumper, core/ledger/postgres/text.py, then
quoted and escaped by regular expressions): a group commit of a batch sent
as a dozen arrays cost the client more than the server spent on it. One
JSON text is written by the standard library's encoder in C and read by the
server once.

What PostgreSQL cannot take from JSON is made what the arrays carried:
a string holding a NUL (the JSON escape `\\u0000` cannot become `text`) or
starting with `MARK` is written in its stored encoding (text.py `encode`),
and a float that is not finite (JSON has no such number) as the text
`Infinity`/`-Infinity`/`NaN`, which `float8` reads. The common batch has
neither and is encoded once; the text is looked at once for either, and
only then encoded again value by value.
"""

from __future__ import annotations

import json
import math
from typing import Any

from reclaim_tui.core.ledger.postgres.text import MARK, encode

__all__ = ["json_rows"]

_FAST = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True)
_SAFE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
#: what, in the fast text, may be a value the server cannot read as written
#: (a string's text may hold these too: then the careful path, same result)
_SUSPECT = ("\\u0000", MARK, "Infinity", "NaN")


def _safe(value: Any) -> Any:
    if isinstance(value, str):
        return encode(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value).replace("inf", "Infinity").replace("nan", "NaN")
    if isinstance(value, dict):
        return {k: _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def json_rows(rows: Any) -> str:
    """`rows` (lists, dicts, str, int, float, None) as JSON the server reads
    back to exactly the values the same arrays would have stored."""
    text = _FAST.encode(rows)
    if any(s in text for s in _SUSPECT):
        text = _SAFE.encode(_safe(rows))
    return text
