"""Copying a ledger to another engine, and proving the copy whole.

`reclaim-tui migrate --from ledger.db --to postgresql://…` (either way round:
the statements are the ledgers' shared SQL). Rows keep their ids, so events
and results keep pointing at their job, and events keep their order. Each
batch is one transaction in the target and every insert is `ON CONFLICT DO
NOTHING`: a copy cut short (killed, server gone) is finished by running it
again, and a finished copy run again writes nothing. So a target may hold
rows already, but only the source's, as they are: a target holding any other
row (another ledger's: its job 1 is not the source's job 1) is refused before
a row is written, or the source's events and result would be filed under
another ledger's job, and a job still waiting in the source would be sent by
both ledgers. A target row that differs from its source row is never
overwritten: the comparison reports it.

`compare` reads both ledgers in id order (jobs, events, results, inbox,
counters) and compares every column of every row: the copy is proven by
what is in the target, not by what the copy thinks it wrote. Copy a ledger
nothing writes to (stop the ticks, the service and the console's engine);
rows changed during the copy show up as differences in the comparison.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.schema import COLUMNS
from reclaim_tui.errors import ConfigError

__all__ = ["TABLES", "Comparison", "TableCopy", "compare", "copy_ledger"]

#: How many of the target's rows a refused copy names.
_NAMED = 5


@dataclass(frozen=True, slots=True)
class _Table:
    name: str
    key: str
    columns: str
    #: the column a difference is reported by (jobs: the job's key, not its id)
    label: int = 0

    def insert(self) -> Sql:
        """One row of every column, unless its key is taken."""
        names = [c.strip() for c in self.columns.split(",")]
        return Sql(
            lambda d: (
                f"INSERT INTO {self.name}({', '.join(names)})"
                f" VALUES ({d.marks(len(names))}) ON CONFLICT DO NOTHING"
            )
        )

    def keyed(self, n: int) -> Sql:
        """The rows of `n` keys (in no order)."""
        return Sql(
            lambda d: f"SELECT {self.columns} FROM {self.name} WHERE {self.key} IN ({d.marks(n)})"
        )

    def select(self) -> Sql:
        return Sql(
            lambda d: (
                f"SELECT {self.columns} FROM {self.name} WHERE {self.key} > {d.p}"
                f" ORDER BY {self.key}"
            )
        )


#: What a copy carries, in the order foreign keys need. The key orders pages.
TABLES = (
    _Table("jobs", "id", "id, " + COLUMNS, label=1),
    _Table("events", "id", "id, at, job, idem, actor, from_status, to_status, note"),
    _Table("results", "job", "job, idem, interaction_id, output_text, usage, raw_json, stored_at"),
    _Table(
        "inbox",
        "webhook_id",
        "webhook_id, received_at, type, interaction, job, api_status, signed_by",
    ),
    _Table("inbox_counters", "name", "name, value, updated_at"),
)


@dataclass(slots=True)
class TableCopy:
    name: str
    read: int = 0
    written: int = 0


@dataclass(slots=True)
class TableCheck:
    name: str
    source: int = 0
    target: int = 0
    different: int = 0
    differing: list[str] = field(default_factory=list)  # keys, the first 20
    source_digest: str = ""
    target_digest: str = ""

    @property
    def same(self) -> bool:
        return (
            self.source == self.target
            and not self.different
            and self.source_digest == self.target_digest
        )


@dataclass(slots=True)
class Comparison:
    tables: list[TableCheck]
    #: the target's id sequences its next insert would collide with
    sequences: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return all(t.same for t in self.tables) and not self.sequences


async def _pages(ledger: Ledger, table: _Table, batch: int) -> AsyncIterator[list[Any]]:
    last: Any = "" if table.key in ("webhook_id", "name") else -1
    while True:
        page = await ledger.select(table.select() + Sql(lambda d: f" LIMIT {d.p}"), [last, batch])
        if not page:
            return
        yield [tuple(r) for r in page]
        last = page[-1][0]


async def copy_ledger(
    source: Ledger,
    target: Ledger,
    *,
    batch: int = 2000,
    progress: Callable[[TableCopy], None] | None = None,
) -> list[TableCopy]:
    """Copy every table of `source` into `target` (see the module's text).

    A ConfigError, before anything is written, when `target` holds a row
    that is not `source`'s as it is (`_foreign_rows`)."""
    foreign = await _foreign_rows(source, target)
    if foreign:
        raise ConfigError(
            f"the target already holds rows that are not the source's ({', '.join(foreign)}):"
            " it is another ledger, or the source changed since a copy into it was cut short;"
            " nothing was copied. Copy into a new ledger (a new file, or an empty schema)"
        )
    copies: list[TableCopy] = []
    await target.before_copy()
    for table in TABLES:
        done = TableCopy(table.name)
        sql = table.insert()
        async for page in _pages(source, table, batch):
            async with target.write() as db:
                cur = await db.executemany(sql, page)
            done.written += max(0, cur.rowcount)
            done.read += len(page)
            if progress is not None:
                progress(done)
        copies.append(done)
    await target.after_copy()
    return copies


async def _foreign_rows(source: Ledger, target: Ledger, *, batch: int = 500) -> list[str]:
    """The first rows of `target` that `source` does not hold as they are,
    each as its table and key (a job by its key): none when the target is
    empty or holds a copy of `source`, whole or cut short.

    Each page of the target's rows is looked up in the source by key, so only
    what the target holds is read, and the two engines' orders of text keys
    need not agree."""
    found: list[str] = []
    for table in TABLES:
        async for page in _pages(target, table, batch):
            keys = [row[0] for row in page]
            sources = {
                row[0]: _norm(tuple(row))
                for row in await source.select(table.keyed(len(keys)), keys)
            }
            for row in page:
                if sources.get(row[0]) != _norm(row):
                    found.append(f"{table.name} {row[table.label]}")
                    if len(found) == _NAMED:
                        return found
    return found


async def _rows(ledger: Ledger, table: _Table, batch: int) -> AsyncIterator[tuple[Any, ...]]:
    async for page in _pages(ledger, table, batch):
        for row in page:
            yield row


async def compare(source: Ledger, target: Ledger, *, batch: int = 5000) -> Comparison:
    """Every row of every table, column by column, in both ledgers: a merge
    of the two in key order."""
    checks: list[TableCheck] = []
    for table in TABLES:
        check = TableCheck(table.name)
        digests = (hashlib.sha256(), hashlib.sha256())
        ours, theirs = _rows(source, table, batch), _rows(target, table, batch)
        a, b = await anext(ours, None), await anext(theirs, None)
        while a is not None or b is not None:
            if b is None or (a is not None and a[0] < b[0]):
                assert a is not None
                _differ(check, f"{a[table.label]} (missing)")
            elif a is None or b[0] < a[0]:
                _differ(check, f"{b[table.label]} (only in the target)")
            elif _norm(a) != _norm(b):
                _differ(check, a[table.label])
            if a is not None and (b is None or a[0] <= b[0]):
                check.source += 1
                digests[0].update(repr(_norm(a)).encode())
                advance_b = b is not None and a[0] == b[0]
                a = await anext(ours, None)
                if not advance_b:
                    continue
            assert b is not None
            check.target += 1
            digests[1].update(repr(_norm(b)).encode())
            b = await anext(theirs, None)
        check.source_digest, check.target_digest = (d.hexdigest()[:16] for d in digests)
        checks.append(check)
    return Comparison(checks, await target.sequences_behind())


def _differ(check: TableCheck, key: Any) -> None:
    check.different += 1
    if len(check.differing) < 20:
        check.differing.append(str(key))


def _norm(row: tuple[Any, ...]) -> tuple[Any, ...]:
    # An INTEGER flag may come back as int or bool, a REAL's whole number as
    # int or float: compare values, not Python types.
    return tuple(float(v) if isinstance(v, (int, float)) else v for v in row)
