"""The console on a PostgreSQL ledger, live (issue 13: both engines).

The same seeded ledger as the other console tests (tests/tui/conftest.py:
rows in every status, built through the engine and the FakeBackend on a
manual clock), written into a fresh PostgreSQL database, and the console
from `make_app` (the CLI's factory) with `settings.db` the database's URL:
its tabs, a row's detail and the text filter read the server; a change
made by another host's connection shows up through the console's own watch
(`ConsoleReader.changed_since` over the updated_at index, no restart, no
ctrl+r); and an operator key writes the row in PostgreSQL.

Nothing here waits on or asserts wall-clock time: the ledger's times come
from the manual clock, the waits are for the effect asserted (pilot_helpers).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.detail_pane import DetailPane

from .conftest import START, Seeded, _seed
from .pilot_helpers import SIZE, press, select, settle, shown, until

pytestmark = pytest.mark.postgres

#: Rows per tab of the seeded ledger (test_keys_view.py has the same on SQLite).
PER_TAB = {
    "all": 8,
    "reserving": 2,
    "orphans": 1,
    "submitted": 2,
    "done": 1,
    "consumed": 1,
    "failed": 1,
    "cancelled": 1,
}
OTHER_HOST = "other-host|4242|b"


@pytest.fixture
def seeded(pg_dsn: str, tmp_path: Path) -> Seeded:
    """The seeded ledger of the console tests, in PostgreSQL."""
    clock = ManualClock(START)
    fake = FakeBackend(clock=clock, latency=None)
    # Seeded.db is any ledger location open_ledger takes: here the URL.
    s = Seeded(pg_dsn, tmp_path / "articles", clock, fake)  # type: ignore[arg-type]
    asyncio.run(_seed(s))
    return s


def on_postgres(app: ReclaimApp) -> bool:
    """The console's reader reads PostgreSQL (not a SQLite file named like the URL)."""
    reader = app.reader
    return reader is not None and reader._fast.dialect == "postgres"


async def test_tabs_detail_and_filter_read_postgresql(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert on_postgres(app)
        assert {r.status for r in app.table.rows_shown} == set(Status)
        counts = {
            "consumed": 1,
            "done": 1,
            "submitted": 2,
            "failed": 1,
            "cancelled": 1,
            "reserving": 2,
        }
        assert await until(pilot, lambda: app.state.counts == counts)
        assert app.state.orphans == 1

        for number, tab in enumerate(TABS, start=1):
            await press(pilot, str(number))
            assert app.state.tab == tab.id
            assert await until(pilot, lambda: app.state.window.view == app.state.view())
            assert len(shown(pilot)) == PER_TAB[tab.id], tab.id
            if tab.status:
                assert {r.status.value for r in app.table.rows_shown} == {tab.status}
        assert shown(pilot) == [seeded.keys["cancelled"]]
        await press(pilot, "3")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["orphan"]])

        # A row's detail: its key, its stored result and its events.
        await press(pilot, "1")
        assert await until(pilot, lambda: len(shown(pilot)) == 8)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "enter")
        pane = app.query_one(DetailPane)
        assert app.screen.maximized is pane
        text = str(pane.query_one("#detail-body").render())
        assert seeded.keys["consumed"] in text
        assert "Result" in text and "sink delivered" in text
        await press(pilot, "escape")

        # The text filter (ILIKE over pg_trgm on the server) and its tokens.
        await press(pilot, "slash")
        await pilot.press(*"SOLAR", "enter")  # ASCII case folds, as on SQLite
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted"]])
        await press(pilot, "slash")
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.press(*"model:pro", "enter")
        pro = {seeded.keys["done"], seeded.keys["submitted2"]}
        assert await until(pilot, lambda: set(shown(pilot)) == pro)
        await press(pilot, "slash")
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.press(*"nothing like it", "enter")
        assert await until(pilot, lambda: app.state.filter_text == "nothing like it")
        assert await until(pilot, lambda: shown(pilot) == [])
        await press(pilot, "escape")  # clears the filter
        assert await until(pilot, lambda: len(shown(pilot)) == 8)


async def test_another_hosts_writes_show_up_without_a_restart(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert on_postgres(app)
        # Count the console's looks for changes, and what each found.
        reader = app.main.feed.opened()
        looks: list[tuple[float, int, float]] = []
        changed_since = reader.changed_since

        async def counted(since: float) -> tuple[int, float]:
            found = await changed_since(since)
            looks.append((since, *found))
            return found

        reader.changed_since = counted  # type: ignore[method-assign]
        assert await until(pilot, lambda: len(looks) >= 1)  # the watch runs on its own
        seen_before = max(latest for _, _, latest in looks)

        # Another host, its own connection: a row cancelled, three rows new.
        seeded.clock.advance(60)
        written_at = seeded.clock.now()
        ledger = await open_ledger(seeded.db, clock=seeded.clock)
        try:
            other = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner=OTHER_HOST)
            await other.operator.cancel(seeded.keys["submitted2"], actor=Actor.CLI)
            specs = [JobSpec(input=f"another host's job {n}", model="m") for n in range(3)]
            await other.submit(specs, send=False)
        finally:
            await ledger.close()

        def shows_the_change() -> bool:
            rows = {r.idem: r.status for r in app.table.rows_shown}
            return rows.get(seeded.keys["submitted2"]) == Status.CANCELLED and len(rows) == 11

        assert await until(pilot, shows_the_change), shown(pilot)
        assert await until(pilot, lambda: app.state.counts.get("cancelled") == 2)
        assert await until(pilot, lambda: app.state.counts.get("reserving") == 5)
        # The look that found it: the 4 rows written, read over the updated_at index.
        found = [(n, latest) for since, n, latest in looks if latest >= written_at]
        assert found, looks
        assert found[0][0] >= 4 and found[0][1] == written_at
        assert seen_before < written_at
        new = [r for r in app.table.rows_shown if r.job.input.startswith("another host's")]
        assert len(new) == 3 and {r.status for r in new} == {Status.RESERVING}

        # The filter sees the new rows too.
        await press(pilot, "slash")
        await pilot.press(*"another host", "enter")
        assert await until(pilot, lambda: len(shown(pilot)) == 3)


async def test_operator_keys_write_the_row_in_postgresql(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert on_postgres(app)
        # r: the failed row is reserved again.
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")

        async def retried() -> bool:
            return (await seeded.get("failed")).status == Status.RESERVING

        assert await until(pilot, retried)
        # c, then y: the submitted row is cancelled, here and on the API.
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "c")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")

        async def cancelled() -> bool:
            return (await seeded.get("submitted")).status == Status.CANCELLED

        assert await until(pilot, cancelled)
        handle = (await seeded.get("submitted")).handle or ""
        assert await until(pilot, lambda: seeded.fake.remotes[handle].status == "cancelled")

        def table_agrees() -> bool:
            rows = {r.idem: r.status for r in app.table.rows_shown}
            return (
                rows.get(seeded.keys["failed"]) == Status.RESERVING
                and rows.get(seeded.keys["submitted"]) == Status.CANCELLED
            )

        assert await until(pilot, table_agrees)
    failed = await seeded.get("failed")
    assert failed.attempts == 0 and failed.last_error is None
    for role in ("failed", "submitted"):
        assert "console" in [e.actor for e in await seeded.events(role)], role


async def test_the_console_on_an_empty_database_waits_for_its_engine_to_create_the_ledger(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reclaim-tui demo --db postgresql://…` on an empty database said "no
    ledger here": the console read before its engine had created the schema
    (only a missing *file* made it wait). The engine's open is slowed here,
    as a worker process's start-up slows it in the demo."""
    from reclaim_tui.core.ledger.postgres.ledger import PgLedger

    real_open = PgLedger.open.__func__  # type: ignore[attr-defined]

    async def slow_open(cls: type[PgLedger], path: str, **kw: object) -> PgLedger:
        if not kw.get("readonly"):
            await asyncio.sleep(0.5)  # the engine's (writable) open comes late
        return await real_open(cls, path, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(PgLedger, "open", classmethod(slow_open))
    clock = ManualClock(START)
    fresh = Seeded(pg_dsn, tmp_path / "articles", clock, FakeBackend(clock=clock))  # type: ignore[arg-type]
    app = fresh.app()
    async with app.run_test(size=SIZE) as pilot:
        assert await until(pilot, lambda: app.reader is not None), "no reader: see the toasts"
        assert on_postgres(app)
        assert app.table.rows_shown == []


@pytest.fixture
def seeded_pooled(pg_bouncer: object, pg_dsn: str, tmp_path: Path) -> Seeded:
    """The seeded ledger, written and read through a real PgBouncer
    (transaction mode, then session mode: tests/helpers/pgbouncer.py)."""
    from tests.helpers.pgbouncer import PgBouncer

    assert isinstance(pg_bouncer, PgBouncer)
    clock = ManualClock(START)
    fake = FakeBackend(clock=clock, latency=None)
    s = Seeded(pg_bouncer.via(pg_dsn), tmp_path / "articles", clock, fake)  # type: ignore[arg-type]
    asyncio.run(_seed(s))
    return s


async def test_the_console_through_a_pooler(seeded_pooled: Seeded) -> None:
    """Issue 23: a console through a transaction pooler died with `relation
    "jobs" does not exist` (its search path was set on one server connection
    only) and left its read-only session on the one the next client got.
    Its tabs, filter and an operator key work through PgBouncer in both modes."""
    seeded = seeded_pooled
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert on_postgres(app)
        assert await until(pilot, lambda: app.state.counts.get("reserving") == 2)
        for number, tab in enumerate(TABS, start=1):
            await press(pilot, str(number))
            assert await until(pilot, lambda: app.state.window.view == app.state.view())
            assert len(shown(pilot)) == PER_TAB[tab.id], tab.id
        await press(pilot, "1")
        await press(pilot, "slash")
        await pilot.press(*"SOLAR", "enter")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted"]])
        await press(pilot, "escape")
        assert await until(pilot, lambda: len(shown(pilot)) == 8)
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
        # A retry spends money: it asks first, with the cost (issue 25).
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")

        async def retried() -> bool:
            return (await seeded.get("failed")).status == Status.RESERVING

        assert await until(pilot, retried)
