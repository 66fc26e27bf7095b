"""Paging through a view longer than the table's 100-row window (issue 15,
item 7): pgdn/pgup move a page and read the next window as they cross into
it, arrows and Home/End cross too, and the help lists each key once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.keymap import KEYS

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until

ROWS = 8 + 250  # the seeded rows and the bulk ones


async def add_rows(seeded: Seeded, count: int) -> None:
    """`count` reserving rows, one second apart (each its own age in state)."""
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        for i in range(count):
            spec = JobSpec(input=f"bulk {i}", model="m")
            await ledger.insert_jobs([(f"bulk-{i:04d}", spec.to_json(), spec.model)], Actor.CLI)
            seeded.clock.advance(1)
    finally:
        await ledger.close()


def position(app: ReclaimApp) -> int:
    """The cursor's row in the whole view (0 is its first row)."""
    return app.state.window.offset + app.table.cursor_row


def page_height(app: ReclaimApp) -> int:
    table = app.table
    return table.scrollable_content_region.height - table.header_height


async def test_pgdn_and_pgup_move_a_page_across_window_edges(seeded: Seeded) -> None:
    await add_rows(seeded, 250)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        step = page_height(app)
        expected = 0
        while expected + step < ROWS:
            await press(pilot, "pagedown")
            expected += step
            assert await until(pilot, lambda e=expected: position(app) == e), (  # type: ignore[misc]
                position(app),
                expected,
            )
        await press(pilot, "pagedown")
        assert position(app) == ROWS - 1
        for _ in range(3):
            before = position(app)
            await press(pilot, "pageup")
            assert await until(pilot, lambda b=before: position(app) == b - step)  # type: ignore[misc]


async def test_home_and_end_go_to_the_ends_of_the_view(seeded: Seeded) -> None:
    await add_rows(seeded, 250)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "end")
        assert await until(pilot, lambda: position(app) == ROWS - 1)
        assert app.table.current_idem() == "bulk-0249"
        await press(pilot, "home")
        assert await until(pilot, lambda: position(app) == 0)


async def test_arrows_pressed_while_the_next_window_loads_are_not_lost(seeded: Seeded) -> None:
    await add_rows(seeded, 250)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.table.move_cursor(row=99)
        await settle(pilot)
        reader = app.main.feed.opened()
        gate = asyncio.Event()
        page: Callable[..., Awaitable[Any]] = reader.page

        async def slow_page(*args: Any, **kwargs: Any) -> Any:
            await gate.wait()  # a big ledger: the window takes a while
            return await page(*args, **kwargs)

        reader.page = slow_page  # type: ignore[method-assign]
        await pilot.press("down", "down", "down")  # a key held down at the edge
        gate.set()
        assert await until(pilot, lambda: position(app) == 102), position(app)


def test_help_lists_each_paging_key_once_and_the_right_way_round() -> None:
    shown = [part for spec in KEYS for part in spec.shown.split(" / ")]
    assert len(shown) == len(set(shown)), sorted(shown)
    page = next(spec for spec in KEYS if "pagedown" in spec.key)
    assert page.shown.startswith("pgdn") and page.help.lower().startswith("page down")
