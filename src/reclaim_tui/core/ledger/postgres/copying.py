"""A copy with ids on PostgreSQL (core/ledger/transfer.py: `migrate`): rows
copied with their ids leave the identity sequences behind, so after a copy
they are moved past the largest id (`after_copy`); that needs UPDATE on the
sequences, checked before a row is copied (`before_copy`); and a copy whose
move did not happen is found (`sequences_behind`), or the next insert would
reuse a copied id."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from reclaim_tui.core.ledger.postgres.connect import quote_ident
from reclaim_tui.core.ledger.postgres.holders import HORIZONS_OF_ROWS
from reclaim_tui.errors import LedgerPermissionError

__all__ = ["SequenceCopies"]


class SequenceCopies:
    """Mixed into PgLedger: the port's copy hooks, over the ledger's schema."""

    path: str
    _conn: psycopg.AsyncConnection[Any]
    #: the ledger's schema
    schema: str

    if TYPE_CHECKING:

        def write(self) -> AbstractAsyncContextManager[Any]: ...

        async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    async def before_copy(self) -> None:
        """A copy moves the identity sequences past the copied ids
        (after_copy), which needs UPDATE on them: refused up front, naming
        the grant, rather than after every row was copied."""
        role = quote_ident(str(self._conn.info.user))
        for table in ("jobs", "events"):
            qualified = sql.Identifier(self.schema, table).as_string()
            rows = await self._fetchall(
                "SELECT pg_get_serial_sequence(%s, 'id'),"
                " has_sequence_privilege(pg_get_serial_sequence(%s, 'id'), 'UPDATE')",
                (qualified, qualified),
            )
            sequence, allowed = rows[0]
            if not allowed:
                raise LedgerPermissionError(
                    f"{self.path}: migrate moves the sequence {sequence} past the copied ids"
                    f" (setval), and the role {role} may not; nothing was copied. It needs"
                    f" GRANT UPDATE ON SEQUENCE {sequence} TO {role} (or run migrate as the"
                    " ledger's owner role)"
                )

    async def after_copy(self) -> None:
        """Rows copied with their ids (core/ledger/transfer.py) leave the identity
        sequences behind: move them past the largest id, or the next insert
        would reuse a copied id. And the leases copied with the rows get
        their owners' horizons (core/ledger/postgres/holders.py), as if
        their claims had been made here."""
        async with self.write() as db:
            for table in ("jobs", "events"):
                qualified = sql.Identifier(self.schema, table).as_string()
                await db.execute(
                    "SELECT setval(pg_get_serial_sequence(%s, 'id'),"
                    f" (SELECT COALESCE(MAX(id), 0) + 1 FROM {qualified}), false)",
                    (qualified,),
                )
            await db.execute(HORIZONS_OF_ROWS)

    async def sequences_behind(self) -> list[str]:
        """The identity sequences whose next id is one a row already has
        (a copy whose setval did not happen): the next insert would fail."""
        behind = []
        for table in ("jobs", "events"):
            qualified = sql.Identifier(self.schema, table).as_string()
            rows = await self._fetchall(
                f"SELECT pg_get_serial_sequence(%s, 'id'), (SELECT MAX(id) FROM {qualified})",
                (qualified,),
            )
            sequence, largest = rows[0]
            state = await self._fetchall(f"SELECT last_value, is_called FROM {sequence}")
            last = int(state[0][0]) - (0 if state[0][1] else 1)
            if largest is not None and last < largest:
                behind.append(
                    f"{sequence}: next id {last + 1}, but {table} holds ids up to"
                    f" {largest} (run migrate again with UPDATE on it, or as the owner role)"
                )
        return behind
