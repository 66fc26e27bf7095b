"""Which schema a PostgreSQL ledger lives in, and the search path its
connections use: `--schema` / RECLAIM_PG_SCHEMA, else the first schema of the
search_path the connection is given (its `options` keyword or PGOPTIONS),
else `reclaim_tui`. Apart from the schema's history (schema.py): this only
reads a URL and the environment."""

from __future__ import annotations

import os
import re

from reclaim_tui.core.ledger.postgres.connect import quote_ident
from reclaim_tui.core.ledger.urls import pg_params

__all__ = ["PG_SCHEMA", "SCHEMA_ENV", "schema_for"]

PG_SCHEMA = "reclaim_tui"
#: The environment variable (and `--schema`) naming the ledger's schema.
SCHEMA_ENV = "RECLAIM_PG_SCHEMA"


def _given_search_path(params: dict[str, str]) -> str | None:
    r"""The search_path a connection is given by its `options` keyword or
    `PGOPTIONS` (`-c search_path=…`, `-csearch_path=…`, `--search_path=…`;
    `\ ` is a blank inside a word); the keyword's wins, as in libpq."""
    for options in (params.get("options"), os.environ.get("PGOPTIONS")):
        # An escape, or a character that is neither blank nor backslash (one way to read it).
        words = re.findall(r"(?:\\.|[^\s\\])+\\?|\\", options or "")
        words = [re.sub(r"\\(.)", r"\1", w) for w in words]
        found = None
        for i, word in enumerate(words):
            if word == "-c" and i + 1 < len(words):
                word = "-c" + words[i + 1]
            m = re.fullmatch(r"(?:-c|--)search[_-]path=(.*)", word, re.S)
            if m:
                found = m.group(1)
        if found is not None:
            return found
    return None


def _split_path(path: str) -> list[str]:
    """A search_path's entries, unquoted (`a, "B c"` → [a, B c])."""
    entries = []
    for m in re.finditer(r'\s*("(?:[^"]|"")*"|[^,]*)\s*(?:,|$)', path):
        item = m.group(1).strip()
        if item.startswith('"'):
            entries.append(item[1:-1].replace('""', '"'))
        elif item:
            entries.append(item.lower())
    return entries


def schema_for(url: str) -> tuple[str, str]:
    """The ledger's schema and the search path its connections use (see the
    module's text: `--schema`/RECLAIM_PG_SCHEMA, the given search_path,
    `reclaim_tui`)."""
    given = _given_search_path(pg_params(url))
    entries = _split_path(given or "")
    named = [e for e in entries if e != "$user"]
    schema = os.environ.get(SCHEMA_ENV) or (named[0] if named else PG_SCHEMA)
    rest = [e for e in entries if e != schema] if given is not None else ["public"]
    return schema, ", ".join(quote_ident(e) for e in [schema, *rest])
