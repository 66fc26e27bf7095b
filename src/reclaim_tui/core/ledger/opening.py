"""Opening a ledger: the one place that picks the engine by the `--db` given.

A PostgreSQL URL or libpq keyword DSN (core/ledger/urls.py) opens a
`PgLedger`, and only then is psycopg imported (start-up time;
tests/unit/test_startup.py); anything else is an SQLite file.
"""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.urls import is_database_url

__all__ = ["open_ledger"]


async def open_ledger(
    db: str | Path,
    *,
    clock: Clock | None = None,
    busy_timeout: float = 10.0,
    readonly: bool = False,
    create: bool = True,
) -> Ledger:
    """Open (and migrate) the ledger `db` names. Raises a LedgerError subclass.

    A ledger that is not a reclaim-tui ledger, or one written by a newer
    version, is refused before a byte of it is written; `create=False`
    refuses to start a new one."""
    spath = str(db)
    if is_database_url(spath):
        from reclaim_tui.core.ledger.postgres import PgLedger  # psycopg only when asked for

        return await PgLedger.open(
            spath, clock=clock, busy_timeout=busy_timeout, readonly=readonly, create=create
        )
    from reclaim_tui.core.ledger.sqlite import SqliteLedger  # aiosqlite only when asked for

    return await SqliteLedger.open(
        spath, clock=clock, busy_timeout=busy_timeout, readonly=readonly, create=create
    )
