"""A read of the ledger that fails in the console is said, on either engine.

The console catches the port's `LedgerError` only (never a driver's own
exception): both engines turn their drivers' errors into it. Here the
results table is renamed under a running console, so the next detail read
fails on the server's or the file's own error; the console says "ledger
read failed" and goes on showing the table.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger

from .conftest import START, Seeded, _seed
from .pilot_helpers import SIZE, notified, settle, until


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def either(request: pytest.FixtureRequest, tmp_path: Path) -> Seeded:
    """The console tests' seeded ledger, in a file or in a PostgreSQL database."""
    clock = ManualClock(START)
    fake = FakeBackend(clock=clock, latency=None)
    db = tmp_path / "ledger.db" if request.param == "sqlite" else request.getfixturevalue("pg_dsn")
    seeded = Seeded(db, tmp_path / "articles", clock, fake)
    asyncio.run(_seed(seeded))
    return seeded


async def _rename_results(seeded: Seeded) -> None:
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        async with ledger.write() as db:
            await db.execute("ALTER TABLE results RENAME TO results_elsewhere")
    finally:
        await ledger.close()


async def test_a_failed_detail_read_is_said_on_either_engine(either: Seeded) -> None:
    app = either.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _rename_results(either)
        keys = [r.idem for r in app.table.rows_shown]
        app.table.move_cursor(row=keys.index(either.keys["failed"]), animate=False)
        assert await until(pilot, notified(pilot, "ledger read failed"))
        assert await until(pilot, lambda: app.is_running and len(app.table.rows_shown) == 8)
