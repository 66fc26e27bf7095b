"""The console rides out a lost ledger connection (issue 33, 1).

A PgBouncer restarted, a PostgreSQL server restarted: every console died
(4 of 4, pooled and direct, read-only and writable) — the once-a-second
watch's `changed_since` raised `LedgerUnavailableError` out of its worker:
a traceback, exit 1. Now the bar says "ledger unavailable", the loop log
says it and the console looks again (1 s doubling to 30 s) on a connection
dialled again; the first look that works says the ledger is back, and what
other hosts write shows up again. A real PgBouncer and a real server of the
test's own (restarting the session's server would break other tests).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.widgets.loop_log import LoopLog
from tests.helpers.pgbouncer import PgBouncer, started_bouncer
from tests.helpers.postgres import PostgresServer, started

from .conftest import START, Seeded, _seed
from .pilot_helpers import SIZE, settle, until

pytestmark = pytest.mark.postgres


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    server = started(PostgresServer())
    try:
        yield server
    finally:
        server.cleanup()


def logged(app: ReclaimApp, text: str) -> int:
    """How many lines of the loop log hold `text`."""
    return sum(text in entry.plain for entry in app.query_one(LoopLog)._entries)


async def seeded_at(url: str, tmp_path: Path) -> Seeded:
    clock = ManualClock(START)
    s = Seeded(url, tmp_path / "articles", clock, FakeBackend(clock=clock, latency=None))  # type: ignore[arg-type]
    await _seed(s)
    return s


async def add_job(s: Seeded, url: str, text: str) -> None:
    """Another host reserves a job (its own connection, straight to the
    server), on the console's manual clock, a minute later (counts a
    slow machine reads slowly are read again at most every 2 s of it)."""
    s.clock.advance(60)
    ledger = await open_ledger(url, clock=s.clock)
    try:
        await ledger.insert_jobs([(f"other-{text}", f'{{"input": "{text}"}}', "m")], "tick")
    finally:
        await ledger.close()


async def rides_out(pilot: object, app: ReclaimApp, times: int) -> None:
    """The console said the ledger unavailable, and back, `times` times
    in all, and is still running."""
    assert await until(pilot, lambda: logged(app, "ledger unavailable") >= times)  # type: ignore[arg-type]
    assert await until(pilot, lambda: logged(app, "ledger back") >= times)  # type: ignore[arg-type]
    assert app.is_running and app.return_code is None
    assert app.main.bar.ledger == ""


async def test_a_read_only_console_rides_out_pooler_and_server_restarts(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    url = own_server.create_database("pooled")
    bouncer = started_bouncer(PgBouncer(own_server, pool_mode="transaction"))
    try:
        s = await seeded_at(bouncer.via(url), tmp_path)
        app = s.app(readonly=True)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert await until(pilot, lambda: app.state.counts.get("reserving") == 2)
            bouncer.restart()
            await rides_out(pilot, app, 1)
            await add_job(s, url, "after the pooler")
            assert await until(pilot, lambda: app.state.counts.get("reserving") == 3)
            own_server.restart_immediate()
            # Through the pooler the server's restart may be met by the pooler
            # alone (it dials the server again); the console must not die
            # either way, and must see what is written after it.
            await add_job(s, url, "after the server")
            assert await until(pilot, lambda: app.state.counts.get("reserving") == 4)
            assert app.is_running and app.return_code is None
    finally:
        bouncer.cleanup()


async def test_a_writable_console_rides_out_a_server_restart(
    own_server: PostgresServer, tmp_path: Path
) -> None:
    url = own_server.create_database("direct")
    s = await seeded_at(url, tmp_path)
    app = s.app(paused=False, interval=1.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await until(pilot, lambda: logged(app, "pass ") >= 1)
        own_server.restart_immediate()
        await rides_out(pilot, app, 1)
        await add_job(s, url, "after the restart")

        async def sent() -> bool:
            ledger = await open_ledger(url, clock=s.clock)
            try:
                row = await ledger.get("other-after the restart")
            finally:
                await ledger.close()
            return row is not None and row.handle is not None

        # The console's loop goes on: a pass after the restart sends the new job.
        assert await until(pilot, sent)
        assert app.is_running and app.return_code is None
