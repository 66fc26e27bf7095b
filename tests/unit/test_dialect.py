"""The ledger's statements in both engines' SQL (core/ledger/dialect.py):
each text written, none rewritten; no regular expression touches SQL."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import reclaim_tui
from reclaim_tui.core.ledger.dialect import POSTGRES, SQLITE, Sql, joined, text_for

SRC = Path(reclaim_tui.__file__).parent

#: Every module that writes or builds a ledger statement.
SQL_MODULES = sorted(
    [
        *(SRC / "core" / "ledger").rglob("*.py"),
        *(SRC / "core").glob("cost_*.py"),
        SRC / "core" / "stats.py",
    ]
)

#: The regular expressions those modules hold, each over text that is not SQL.
NOT_SQL = {
    ("prune.py", r"(\d+(?:\.\d+)?)\s*([smhdw]?)"): "an age such as 30d",
    ("row_filters.py", r"(?P<name>[A-Za-z_]+)(?P<op>>=|<=|>|<|=|:)(?P<value>.*)"): "a filter word",
    ("row_filters.py", r"[^\"\\\s=]+"): "a label's name",
    ("row_filters.py", r"\$?(?P<usd>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"): "a cost filter's figure",
    ("row_filters.py", r"[0-9]+"): "an attempts filter's figure",
    (
        "connect.py",
        r"permission denied for (table|sequence|schema|database|function) (\S+)",
    ): "a server's error message",
    ("search_path.py", r"(?:\\.|[^\s\\])+\\?|\\"): "a libpq options word",
    ("search_path.py", r"\\(.)"): "a libpq options escape",
    ("search_path.py", r"(?:-c|--)search[_-]path=(.*)"): "a search_path option",
    ("search_path.py", r'\s*("(?:[^"]|"")*"|[^,]*)\s*(?:,|$)'): "a search_path's schemas",
    ("urls.py", "'(?<!\\\\S)(' + '|'.join(sorted(PG_KEYWORDS)) + ')\\\\s*='"): "a DSN keyword",
    ("urls.py", "f'[?&]{key}=([^&]*)'"): "a URL's query parameter",
    (
        "urls.py",
        "f\"(?:^|\\\\s){key}\\\\s*=\\\\s*('(?:[^'\\\\\\\\]|\\\\\\\\.)*'?|\\\\S*)\"",
    ): "a DSN keyword's value",
}


def _regex_uses(path: Path) -> list[tuple[str, str]]:
    """(module, pattern) of every `re.<function>(…)` call in `path`; a
    pattern that is not a literal is shown as its source."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re"
        ):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                pattern = first.value
            else:
                pattern = ast.unparse(first) if first is not None else ""
            found.append((path.name, pattern))
    return found


def test_no_regular_expression_touches_sql() -> None:
    """The statements are written per engine, never rewritten: the only
    regular expressions beside them read operators' input, libpq options
    and server messages, each listed with what it reads."""
    uses = [use for path in SQL_MODULES for use in _regex_uses(path)]
    assert sorted(set(uses)) == sorted(NOT_SQL)
    assert not (SRC / "core" / "ledger" / "pg_sql.py").exists()


def test_each_engine_has_its_own_words() -> None:
    sql = Sql(
        lambda d: (
            f"SELECT j.idem FROM {d.each('k')} {d.cross_join} jobs{d.indexed_by('jobs_due')}"
            f" AS j ON j.idem = k.value WHERE j.note {d.like} {d.p} || '{d.pct}'"
            f" AND {d.member('r.usage', 'total_input_tokens')} > {d.p}"
            f" AND {d.input_text('j.spec')} IS NOT NULL"
        )
    )
    assert str(sql) == (
        "SELECT j.idem FROM json_each(?) AS k CROSS JOIN jobs INDEXED BY jobs_due"
        " AS j ON j.idem = k.value WHERE j.note LIKE ? || '%'"
        " AND json_extract(r.usage, '$.total_input_tokens') > ?"
        " AND CASE WHEN json_valid(j.spec) THEN json_extract(j.spec, '$.input') END IS NOT NULL"
    )
    assert sql.postgres == (
        "SELECT j.idem FROM json_array_elements_text(%s::json) AS k(value) JOIN jobs"
        " AS j ON j.idem = k.value WHERE j.note ILIKE %s || '%%'"
        " AND (r.usage::json ->> 'total_input_tokens') > %s"
        " AND reclaim_input(j.spec) IS NOT NULL"
    )
    assert SQLITE.marks(3) == "?, ?, ?" and POSTGRES.marks(2) == "%s, %s"
    assert SQLITE.not_indexed == " NOT INDEXED" and POSTGRES.not_indexed == ""


def test_string_literals_are_the_statements_own() -> None:
    """Nothing rewrites a text, so words inside a literal stay as written."""
    sql = Sql(lambda d: f"SELECT 'a NOT INDEXED', 'LIKE json_each(?)' FROM jobs WHERE x = {d.p}")
    assert sql.postgres == "SELECT 'a NOT INDEXED', 'LIKE json_each(?)' FROM jobs WHERE x = %s"


def test_parts_compose_in_both_dialects() -> None:
    free = Sql(lambda d: f"lease_until <= {d.p}")
    among = Sql(lambda d: f"idem IN (SELECT value FROM {d.each()})")
    where = "held = 0 AND " + free + " AND " + among
    assert isinstance(where, Sql)
    assert (
        str(where)
        == "held = 0 AND lease_until <= ? AND idem IN (SELECT value FROM json_each(?) AS _each)"
    )
    assert where.postgres == (
        "held = 0 AND lease_until <= %s AND idem IN"
        " (SELECT value FROM json_array_elements_text(%s::json) AS _each(value))"
    )
    both = joined(" OR ", [free, "TRUE"])
    assert (str(both), both.postgres) == ("lease_until <= ? OR TRUE", "lease_until <= %s OR TRUE")
    assert text_for(where, POSTGRES) == where.postgres and text_for("x", POSTGRES) == "x"
    assert where.of(SQLITE) == str(where)
    copy = pickle.loads(pickle.dumps(where))
    assert (str(copy), copy.postgres) == (str(where), where.postgres)


def test_a_part_spliced_into_an_f_string_is_refused() -> None:
    """An f-string would carry SQLite's text alone to PostgreSQL."""
    part = Sql(lambda d: f"x = {d.p}")
    with pytest.raises(TypeError, match="spliced into an f-string"):
        _ = f"SELECT 1 WHERE {part}"
