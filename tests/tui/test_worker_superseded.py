"""A console worker that waits for another must not crash the console when
the one it waits for is cancelled: Textual raises `WorkerCancelled` into the
waiting worker, and an unhandled worker error ends the app.

Found by CI (stop 29): the console on an empty PostgreSQL database, shut down
while its first page was still being read, ended with `WorkerFailed:
WorkerCancelled`. The same crash reached an operator who pressed a tab key
before the first page arrived (the tab's read replaces the first one), and one
who quit while the engine was still starting."""

from __future__ import annotations

import asyncio

import pytest

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.runner.host import EngineHost

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until


async def test_a_tab_pressed_before_the_first_page_arrives(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_page = ConsoleReader.page
    first = asyncio.Event()
    release = asyncio.Event()
    calls = 0

    async def gated(self: ConsoleReader, *args: object, **kw: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:  # the first page is slow: the operator does not wait
            first.set()
            await release.wait()
        return await real_page(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ConsoleReader, "page", gated)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        assert await until(pilot, first.is_set)
        await press(pilot, "2")  # a tab: its read replaces the first page's
        release.set()
        await settle(pilot)
        assert app._exception is None, app._exception
        assert app.is_running
        assert await until(pilot, lambda: app.state.window.view == app.state.view())
        assert app.table.rows_shown, "the tab's rows are shown"
        # The first page's worker was replaced, not the watch: a change is still seen.
        assert app.main.feed._watching


async def test_quitting_while_the_first_page_is_read(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI's case: the app shut down while the first page was being read."""
    real_page = ConsoleReader.page
    reading = asyncio.Event()

    async def first_never(self: ConsoleReader, *args: object, **kw: object) -> object:
        if not reading.is_set():
            reading.set()
            await asyncio.Event().wait()  # the first read does not answer
        return await real_page(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(ConsoleReader, "page", first_never)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        assert await until(pilot, reading.is_set)
        # The screen's workers are cancelled in their own order: the page first here.
        for worker in app.main.workers:
            if worker.group == "page":
                worker.cancel()
        await settle(pilot)
    # Leaving run_test shut the app down; a crash would have been raised there.
    assert app._exception is None, app._exception


async def test_the_engine_start_cancelled_while_the_console_waits_for_it(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console waits for its engine when the ledger is not there yet; the
    engine's start cancelled (a quit, a `:ledger` switch) must not crash it."""
    started = asyncio.Event()

    async def never(self: EngineHost) -> None:
        started.set()
        await asyncio.Event().wait()  # a database that never answers

    monkeypatch.setattr(EngineHost, "start", never)
    seeded.db.rename(seeded.db.with_suffix(".moved"))  # the engine must create it
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        assert await until(pilot, started.is_set)
        for worker in app.workers:
            if worker.name == "start_engine":
                worker.cancel()
        await settle(pilot)
    assert app._exception is None, app._exception
