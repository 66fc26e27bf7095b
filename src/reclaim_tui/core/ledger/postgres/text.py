"""Text PostgreSQL cannot hold, stored losslessly.

A PostgreSQL `text` value cannot contain U+0000; SQLite's can. A job's input
may carry one (its spec is JSON, where NUL is already the escape `\\u0000`),
and then so may what comes back from the API: the result's output text, an
error message, an event's note. Refusing such a value in the driver failed
the whole transaction it was in — every pass, for every row of that batch.

So on PostgreSQL every string parameter that holds a NUL is written as
`MARK` + its JSON text (NUL becomes `\\u0000`), and every text value read
that is such an encoding is decoded back. A string that itself starts with
`MARK` is encoded too, so decoding is exact for every string. `MARK` is
U+FDD0, a Unicode noncharacter: no real text starts with it, and any other
string — every key, spec and nearly every result — is stored and compared
exactly as before. What reads the encoded form on the server (the filter's
`ILIKE`) sees the JSON text, where NUL is `\\u0000` and the rest is unchanged.

An encoding is exactly what `encode` writes: `MARK` + `json.dumps` of a
string that holds a NUL or starts with `MARK`. Text stored before this
encoding existed may start with `MARK` too: `decode` reads any text that is
not an encoding as it is (it never fails a read), and PostgreSQL migration 4
(core/ledger/postgres/marked.py) encodes the old rows, so that after it every
stored text that starts with `MARK` is an encoding. The one text still read
as another is an old one that was itself, character for character, the
encoding of another (a noncharacter and a JSON string holding an escaped
NUL or a second noncharacter): no text a person or the API writes.
"""

from __future__ import annotations

import json
from typing import Any

from psycopg.adapt import AdaptersMap, Buffer
from psycopg.types.string import StrDumperUnknown, TextLoader

__all__ = ["MARK", "decode", "encode", "register"]

MARK = "\ufdd0"
_MARK_BYTES = MARK.encode("utf-8")


def encode(text: str) -> str:
    """`text` as PostgreSQL can hold it (unchanged unless it has a NUL or starts with MARK)."""
    if "\x00" in text or text.startswith(MARK):
        return MARK + json.dumps(text, ensure_ascii=False)
    return text


def decode(stored: str) -> str:
    """The string `encode` was given; `stored` itself when `encode` did not
    write it (text stored before the encoding)."""
    if stored.startswith(MARK):
        body = stored[len(MARK) :]
        try:
            value = json.loads(body)
        except (ValueError, RecursionError):
            return stored
        if (
            isinstance(value, str)
            and ("\x00" in value or value.startswith(MARK))
            and json.dumps(value, ensure_ascii=False) == body
        ):
            return value
    return stored


class _Dumper(StrDumperUnknown):
    """psycopg's default `str` dumper (unknown oid, text format), encoding first."""

    def dump(self, obj: str) -> Buffer | None:
        return super().dump(encode(obj))


class _Loader(TextLoader):
    """psycopg's `text` loader, decoding what `_Dumper` encoded."""

    def load(self, data: Buffer) -> Any:
        # One byte compared first: a read of every row pays next to nothing.
        if data and data[0] == 0xEF and bytes(data[:3]) == _MARK_BYTES:
            return decode(str(data, "utf-8"))
        return super().load(data)


def register(adapters: AdaptersMap) -> None:
    """Encode `str` parameters and decode `text`/`varchar` results on one connection."""
    adapters.register_dumper(str, _Dumper)
    for name in ("text", "varchar", "bpchar", "name"):
        adapters.register_loader(name, _Loader)
