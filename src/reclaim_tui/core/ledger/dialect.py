"""The ledger's statements in both engines' SQL, each written once.

Most of a statement is the SQL SQLite and PostgreSQL share (`UPDATE …
RETURNING`, `ON CONFLICT … DO UPDATE`, `excluded.`, `COALESCE`, `CASE`, row
values). What differs is a handful of words, and each is a field of a
`Dialect`: the parameter marker, a literal percent sign beside parameters,
a JSON array parameter read as rows, a member of a JSON column, the spec's
input text, case-folding `LIKE`, SQLite's planner hints. A statement that
differs is a function of the dialect, rendered once per engine by plain
string formatting into an `Sql`: a `str` holding SQLite's text, with
PostgreSQL's in `.postgres`. SQLite's connection reads it as the string it
is; PostgreSQL's session (core/ledger/postgres/session.py) and reads
(core/ledger/postgres/ledger.py) send `.postgres`. A plain `str` is a statement
both engines read alike: no parameters of its own, nothing that differs.

    SHARED = "SELECT COUNT(*) FROM jobs"
    BY_KEY = Sql(lambda d: f"SELECT status FROM jobs WHERE idem = {d.p}")
    BY_KEY.postgres == "SELECT status FROM jobs WHERE idem = %s"

Pieces compose by `+` (`Sql + Sql`, `Sql + str`, `str + Sql` give an `Sql`:
a plain part goes into both texts), or by `part.of(d)` inside another
statement's function. An `Sql` spliced into an f-string raises TypeError
(it would carry SQLite's text alone), on either engine; a plain string
holding a `?` sent to PostgreSQL is refused by psycopg (no placeholder in
it): the contract and PostgreSQL suites run every statement on both.

Nothing rewrites SQL text. The earlier design wrote SQLite's dialect and
rewrote it for PostgreSQL with regular expressions, which ran over string
literals too and had to guess where a literal ended. sqlglot was weighed:
it transpiles between dialects, but by parsing and regenerating each
statement (the text sent would be its rendering, not ours; a statement it
misreads changes meaning silently), it knows nothing of the PostgreSQL
schema's `reclaim_input` function, and it is a large dependency for about
ten words. Parameters keep each engine's own positional marker (`?`,
psycopg's `%s`), so a statement's parameters are the same sequence on both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["DIALECTS", "POSTGRES", "SQLITE", "Dialect", "Sql", "joined", "text_for"]


@dataclass(frozen=True, slots=True)
class Dialect:
    """The words of one engine's SQL that differ from the other's."""

    name: str
    #: one positional parameter
    p: str
    #: a literal percent sign in a statement with parameters (psycopg reads
    #: `%` as the start of a parameter everywhere, literals included)
    pct: str
    #: `LIKE` folding ASCII case (SQLite's `LIKE` does; PostgreSQL's
    #: `ILIKE` on the "C"-collated text columns, the same rule)
    like: str
    #: a join SQLite's planner takes in the written order; an inner join
    cross_join: str
    #: scan the table without an index (SQLite: rowid order)
    not_indexed: str
    #: the column that breaks ties in an order by the age and updated
    #: indexes: SQLite's hold the rowid (jobs.id) after the time,
    #: PostgreSQL's the key (core/ledger/sqlite/schema.py's migration 11)
    tie: str
    _indexed_by: str
    _each: str
    _filter_in: str
    _member: str
    _input: str

    def marks(self, n: int) -> str:
        """`n` parameters, comma-separated."""
        return ", ".join([self.p] * n)

    def each(self, alias: str = "_each") -> str:
        """A JSON array parameter as rows with one column, `value` (text)."""
        return self._each.format(p=self.p, alias=alias)

    def filter_in(self, column: str) -> str:
        """`column` is one of a JSON array parameter's values, as a filter on
        rows another condition finds (a claim's status and due time), never
        the scan's driver. PostgreSQL: `NOT (… NOT IN …)`, since a `NOT IN`
        is never turned into a join: the array's values are read once into
        a hash each row is looked up in. The plain `IN (SELECT …)` may become
        a nested loop that reads the whole array again for every candidate
        row (the planner's choice while a freshly filled table has no
        statistics), and `= ANY(…)` may be served by the trigram index,
        whose equality search reads most of that index. `x NOT IN (…)` is
        defined as `NOT (x IN (…))`, so the two negations cancel exactly,
        in three-valued logic too (a NULL among the values, an empty list)."""
        return self._filter_in.format(p=self.p, column=column)

    def indexed_by(self, index: str) -> str:
        """A planner hint naming `index` (PostgreSQL: none)."""
        return self._indexed_by.format(index=index)

    def member(self, column: str, name: str) -> str:
        """The top-level member `name` of the JSON text in `column`, as text."""
        return self._member.format(column=column, name=name)

    def input_text(self, spec: str) -> str:
        """The searchable input of the spec JSON in column `spec`: the text
        of a string input, the JSON text of a structured one; NULL for a
        spec that is not JSON (a hand-edited row must not make every write
        to it fail). PostgreSQL: the schema's `reclaim_input` function
        (core/ledger/postgres/schema.py)."""
        return self._input.format(spec=spec)


SQLITE = Dialect(
    name="sqlite",
    p="?",
    pct="%",
    like="LIKE",
    cross_join="CROSS JOIN",
    not_indexed=" NOT INDEXED",
    tie="id",
    _indexed_by=" INDEXED BY {index}",
    _each="json_each({p}) AS {alias}",
    _filter_in="{column} IN (SELECT value FROM json_each({p}))",
    _member="json_extract({column}, '$.{name}')",
    _input="CASE WHEN json_valid({spec}) THEN json_extract({spec}, '$.input') END",
)
POSTGRES = Dialect(
    name="postgres",
    p="%s",
    pct="%%",
    like="ILIKE",
    cross_join="JOIN",
    not_indexed="",
    tie="idem",
    _indexed_by="",
    _each="json_array_elements_text({p}::json) AS {alias}(value)",
    _filter_in="NOT ({column} NOT IN (SELECT value FROM json_array_elements_text({p}::json)))",
    _member="({column}::json ->> '{name}')",
    _input="reclaim_input({spec})",
)
DIALECTS = {d.name: d for d in (SQLITE, POSTGRES)}


class Sql(str):
    """A statement (or a part of one) in both dialects: the string is
    SQLite's text, `postgres` PostgreSQL's (see the module's text)."""

    postgres: str

    def __new__(cls, build: Callable[[Dialect], str]) -> Sql:
        return cls.pair(build(SQLITE), build(POSTGRES))

    @classmethod
    def pair(cls, sqlite: str, postgres: str) -> Sql:
        """The statement whose texts are `sqlite` and `postgres`."""
        made = str.__new__(cls, sqlite)
        made.postgres = postgres
        return made

    def of(self, dialect: Dialect) -> str:
        """The text in `dialect`."""
        return self.postgres if dialect is POSTGRES else str(self)

    def __add__(self, other: str) -> Sql:
        return Sql.pair(str(self) + _sqlite(other), self.postgres + text_for(other, POSTGRES))

    def __radd__(self, other: str) -> Sql:
        return Sql.pair(_sqlite(other) + str(self), text_for(other, POSTGRES) + self.postgres)

    def __format__(self, spec: str) -> str:
        # An f-string would take SQLite's text alone, and PostgreSQL would
        # be sent it: a part goes into another statement by `+` or `.of(d)`.
        raise TypeError(f"an Sql statement spliced into an f-string: {str(self)!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Sql.pair, (str(self), self.postgres))


def joined(sep: str, parts: Iterable[str]) -> Sql:
    """`sep.join(parts)` in both dialects."""
    listed = list(parts)
    return Sql.pair(
        _sqlite(sep).join(_sqlite(p) for p in listed),
        text_for(sep, POSTGRES).join(text_for(p, POSTGRES) for p in listed),
    )


def text_for(sql: str, dialect: Dialect) -> str:
    """`sql`'s text in `dialect`: an `Sql`'s own, a plain string as it is."""
    return sql.of(dialect) if isinstance(sql, Sql) else sql


def _sqlite(sql: str) -> str:
    return str.__str__(sql)
