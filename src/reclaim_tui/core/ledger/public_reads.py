"""The public reads of a ledger, on either engine: a row, its result and
timeline, pages of rows, counts (core/ledger/reads.py's SQL). A part of
`LedgerBase` (base.py): the read side apart from the claims and writes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import reads
from reclaim_tui.core.models import Event, Row, StoredResult
from reclaim_tui.errors import LedgerError

__all__ = ["PublicReads"]


class PublicReads(ABC):
    """Reads through the engine's `_fetchall` (one locked read)."""

    clock: Clock

    @abstractmethod
    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    @abstractmethod
    async def dead_holders(self, me: str) -> list[str]: ...

    # -- reading --------------------------------------------------------------------
    async def select(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """A read for the console's windowed queries (core/ledger/console/queries.py); tuples
        in the SELECT's column order."""
        return await self._fetchall(sql, params)

    async def select_each(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """Several reads that depend on no answer of another: each
        statement's tuples, in the statements' order (SQLite runs them in one
        call to its connection's thread)."""
        return [await self._fetchall(sql, params) for sql, params in statements]

    async def select_then(
        self,
        statements: Sequence[tuple[str, Sequence[Any]]],
        then: Callable[[list[list[Any]]], Sequence[tuple[str, Sequence[Any]]]],
    ) -> tuple[list[list[Any]], list[list[Any]] | None]:
        """Reads, then the reads `then` (a plain function) makes of their
        answers: SQLite runs both in one call to its connection's thread.
        The second reads' answers are None when one of them fails: the
        caller reads what they are for its own way."""
        first = await self.select_each(statements)
        try:
            return first, await self.select_each(then(first))
        except LedgerError:
            return first, None

    async def get(self, idem: str) -> Row | None:
        return await reads.get(self._fetchall, idem)

    async def get_many(self, idems: Sequence[str]) -> dict[str, Row]:
        return await reads.get_many(self._fetchall, idems)

    async def find(self, prefix: str, limit: int = 5) -> list[Row]:
        """Rows whose key starts with `prefix` (operators type short keys): the
        first `limit` of them, in key order."""
        return await reads.find(self._fetchall, prefix, limit)

    def iter_rows(self, batch: int = 2000) -> AsyncIterator[Row]:
        """Every row, in key order, a page at a time (exports)."""
        return reads.iter_rows(self._fetchall, batch)

    async def result(self, idem: str) -> StoredResult | None:
        return await reads.result(self._fetchall, idem)

    async def results(self, idems: Sequence[str]) -> dict[str, StoredResult]:
        return await reads.results(self._fetchall, idems)

    async def events(self, idem: str, limit: int = 10_000) -> list[Event]:
        return await reads.events(self._fetchall, idem, limit)

    async def counts(self) -> dict[str, tuple[int, float | None]]:
        """Per status: (count, oldest state_since)."""
        return await reads.counts(self._fetchall)

    async def orphan_count(self, me: str = "", *, dead: Sequence[str] | None = None) -> int:
        """Orphans (ORPHAN_SQL): what `status` and the console's orphans tab
        count. `dead`: the holders known dead (looked up when None)."""
        if dead is None:
            dead = await self.dead_holders(me)
        return await reads.orphan_count(self._fetchall, self.clock.now(), dead)
