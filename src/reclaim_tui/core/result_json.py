"""A result's stored JSON text without the encoder's copies of its long strings.

`json.dumps` encodes each string into a new one and joins the pieces at the
end: a result whose output text (in its step and again as `output_text`) is
long is held as parsed, twice more as encoded pieces and twice as the joined
text. `sorted_json` gives the same text, character for character, from a
skeleton in which each long string is a marker, its pieces spliced between:
a string that JSON need not escape is spliced as it is (no copy), any other
is encoded once however often it appears.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from typing import Any

__all__ = ["LONG", "acyclic_encoder", "sorted_json"]

#: Strings from this many characters are spliced rather than encoded in place.
LONG = 1 << 16
# What `json.dumps(..., ensure_ascii=False)` escapes in a string.
_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def sorted_json(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False)`, the same text."""
    long: dict[int, str] = {}
    nonce = secrets.token_hex(16)
    try:
        skeleton = _marked(value, long, nonce)
    except RecursionError:  # nested deeper than Python's stack: as the encoder does
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    text = json.dumps(skeleton, sort_keys=True, ensure_ascii=False)
    if not long:
        return text
    # The skeleton's text split at its markers: text, number, text, ...
    parts = re.split(r'"\\u0000' + nonce + r':(\d+)\\u0000"', text)
    if sorted(int(n) for n in parts[1::2]) != list(long):  # unique by their nonce
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    pieces: list[str] = []
    encoded: dict[int, str] = {}
    for n, between in enumerate(parts):
        if n % 2 == 0:
            pieces.append(between)
            continue
        string = long[int(between)]
        if _ESCAPED.search(string) is None:
            pieces += ('"', string, '"')
            continue
        if id(string) not in encoded:
            encoded[id(string)] = json.dumps(string, ensure_ascii=False)
        pieces.append(encoded[id(string)])
    return "".join(pieces)


def acyclic_encoder(*, ensure_ascii: bool) -> Callable[[Any], str]:
    """`json.JSONEncoder(sort_keys=True, ensure_ascii=…).encode`, the same
    text, for values that hold no cycle (an API's answer, parsed from JSON).

    `encode` makes a new C encoder at each call, with a dict of the
    containers it is inside of to find a cycle (one kept across calls would
    keep what an encoding that failed left in it). Made once here, without
    that dict: a value nested too deep, a cycle included, raises
    RecursionError, as a deep one already does. Where the interpreter has
    no C encoder, `encode` itself."""
    python = json.JSONEncoder(sort_keys=True, ensure_ascii=ensure_ascii)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return python.encode
    quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
    c_encode = make(
        None, python.default, quote, None, python.key_separator, python.item_separator,
        True, False, True,
    )  # fmt: skip
    join = "".join

    def encode(value: Any) -> str:
        return join(c_encode(value, 0))

    return encode


def _marker(nonce: str, key: int) -> str:
    return f"\x00{nonce}:{key}\x00"


def _marked(value: Any, long: dict[int, str], nonce: str) -> Any:
    """`value` with each long string a unique marker (`long`: by marker number)."""
    if type(value) is str:
        if len(value) < LONG:
            return value
        key = len(long)
        long[key] = value
        return _marker(nonce, key)
    if isinstance(value, dict):
        return {k: _marked(v, long, nonce) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_marked(v, long, nonce) for v in value]
    return value
