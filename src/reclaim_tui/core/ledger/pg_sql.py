"""The ledger's SQL, spoken to PostgreSQL.

The ledger's statements are written once, in the SQL both engines share
(`UPDATE … RETURNING`, `ON CONFLICT … DO UPDATE`, `excluded.`, `COALESCE`,
`CASE`, row values), in SQLite's spelling of the few things that differ.
`to_postgres` rewrites exactly those, and nothing else:

    ?  ?N              psycopg's %s, parameters reordered (a ?N may repeat)
    %                  %% (psycopg reads % everywhere, literals included)
    json_each(?) [AS k]          json_array_elements_text(%s::json) AS k(value)
    CROSS JOIN t AS a ON         JOIN t AS a ON (SQLite: a join-order hint)
    INDEXED BY i, NOT INDEXED    dropped (SQLite planner hints), outside literals
    LIKE               ILIKE (SQLite's LIKE ignores ASCII case)
    CASE WHEN json_valid(c) THEN json_extract(c, '$.input') END
                       reclaim_input(c) (a function of the PostgreSQL schema)
    json_extract(c, '$.name')    (c::json ->> 'name'), text: CAST it (core/cost_totals.py
                       reads a stored usage's token counts this way)

A statement holding anything SQLite-only that is not in this list is refused
(`SqliteOnlyError`) rather than sent: the contract suite runs every statement
of the ledger on both engines, and a new one that needs a rewrite fails there
at once instead of meaning something else on a server.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

__all__ = ["SqliteOnlyError", "reorder", "to_postgres"]


class SqliteOnlyError(ValueError):
    """A statement uses SQLite-only SQL this module does not rewrite."""


_JSON_EACH = re.compile(r"json_each\((\?\d*)\)(?:\s+AS\s+(\w+))?", re.IGNORECASE)
_CROSS_JOIN = re.compile(r"\bCROSS JOIN\s+(\w+\s+AS\s+\w+)\s+ON\b", re.IGNORECASE)
_HINT = re.compile(r"\s+(?:INDEXED BY\s+\w+|NOT INDEXED)\b", re.IGNORECASE)
_LIKE = re.compile(r"(?<!I)\bLIKE\b")
_INPUT = re.compile(
    r"CASE WHEN json_valid\(([\w.]+)\) THEN json_extract\(\1, '\$\.input'\) END", re.IGNORECASE
)
# One top-level member of a column holding JSON; other paths stay refused.
_JSON_MEMBER = re.compile(r"json_extract\(([\w.]+), '\$\.(\w+)'\)", re.IGNORECASE)
_SQLITE_ONLY = re.compile(
    r"\b(?:json_each|json_extract|json_valid|json_group_array|PRAGMA|INSERT OR|REPLACE INTO|"
    r"rowid|MATCH|GLOB|AUTOINCREMENT|sqlite_master|julianday|strftime|iif)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=1024)
def to_postgres(sql: str) -> tuple[str, tuple[int, ...] | None]:
    """(the statement for psycopg, the parameter order or None when the
    parameters go in as given)."""
    sql = _INPUT.sub(r"reclaim_input(\1)", sql)
    sql = _JSON_MEMBER.sub(r"(\1::json ->> '\2')", sql)
    sql = _JSON_EACH.sub(
        lambda m: f"json_array_elements_text({m[1]}::json) AS {m[2] or '_each'}(value)", sql
    )
    sql = _CROSS_JOIN.sub(r"JOIN \1 ON", sql)
    sql = _outside_literals(sql, lambda code: _HINT.sub("", code))
    out: list[str] = []
    order: list[int] = []
    numbered = False
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "'":  # a literal: copied as it is, % doubled
            end = i + 1
            while end < n:
                if sql[end] == "'":
                    if end + 1 < n and sql[end + 1] == "'":
                        end += 2
                        continue
                    break
                end += 1
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
            continue
        if c == "?":
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            if j > i + 1:
                numbered = True
                order.append(int(sql[i + 1 : j]) - 1)
            else:
                order.append(len(order))
            out.append("%s")
            i = j
            continue
        out.append("%%" if c == "%" else c)
        i += 1
    text = "".join(out)
    code = re.sub(r"'(?:[^']|'')*'", "''", text)  # literals may say anything
    text = _outside_literals(text, lambda code: _LIKE.sub("ILIKE", code))
    if (found := _SQLITE_ONLY.search(code)) is not None:
        raise SqliteOnlyError(f"SQLite-only SQL ({found[0]!r}) not rewritten for PostgreSQL: {sql}")
    return text, tuple(order) if numbered else None


def _outside_literals(text: str, rewrite: Callable[[str], str]) -> str:
    """`text` with `rewrite` applied to its code, its string literals as they are."""
    parts = re.split(r"('(?:[^']|'')*')", text)
    return "".join(p if k % 2 else rewrite(p) for k, p in enumerate(parts))


def reorder(params: Sequence[Any], order: tuple[int, ...] | None) -> Sequence[Any]:
    """The parameters in the order `to_postgres` gave."""
    if order is None:
        return params
    return [params[k] for k in order]
