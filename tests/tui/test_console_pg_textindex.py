"""The console on a PostgreSQL ledger without pg_trgm's indexes says so
(issue 23, point 2: the filter silently read every row)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import FakeBackend

from .conftest import START, Seeded, _seed
from .pilot_helpers import SIZE, notified, settle, until

pytestmark = pytest.mark.postgres


async def test_a_missing_text_index_is_said(pg_dsn: str, tmp_path: Path) -> None:
    clock = ManualClock(START)
    seeded = Seeded(pg_dsn, tmp_path / "articles", clock, FakeBackend(clock=clock, latency=None))  # type: ignore[arg-type]
    await asyncio.to_thread(asyncio.run, _seed(seeded))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DROP EXTENSION pg_trgm CASCADE")  # an administrator's choice
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await until(pilot, notified(pilot, "no trigram index for the text filter"))
