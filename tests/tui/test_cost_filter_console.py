"""`/cost>…` in the console (issue 25): the rows the price table the console
started with (`$RECLAIM_PRICES` over the shipped one: the table `$` uses)
prices above or below the figure, and the bar's "of N"; a bad figure or an
unreadable price file is said, and the filter before it stays."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reclaim_tui.core.costs import cost_of, load_prices
from reclaim_tui.core.ledger.console.views import Page, View
from reclaim_tui.tui.widgets.loop_bar import LoopBar

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, shown, until


def bar(app: object) -> str:
    return str(app.main.query_one(LoopBar).render())  # type: ignore[attr-defined]


async def test_cost_filter_shows_the_rows_the_consoles_prices_put_above_or_below(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "prices.json"
    # Flash at $10,000 per 1M tokens: the consumed row (7 in, 8 out) costs $0.15.
    prices.write_text(
        json.dumps({"models": {"gemini-flash-latest": {"input": 1e4, "output": 1e4}}})
    )
    monkeypatch.setenv("RECLAIM_PRICES", str(prices))
    table = load_prices(prices, environ={})
    consumed, done = (await seeded.get("consumed")), (await seeded.get("done"))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = len(shown(pilot))
        reader = app.main.feed.opened()
        costs = {}
        for row in (consumed, done):  # the two rows with a result (the fake's token counts)
            result = (await reader.detail(row.idem)).result  # type: ignore[union-attr]
            costs[row.idem] = cost_of(result.usage, row.model, table)  # type: ignore[union-attr]
        assert costs[consumed.idem] == pytest.approx(0.15)
        assert costs[done.idem] is not None and costs[done.idem] < 0.001  # shipped pro price

        await press(pilot, "slash", *"cost>0.1", "enter")
        assert await until(pilot, lambda: shown(pilot) == [consumed.idem])
        await settle(pilot)
        assert f"rows 1–1 of 1 matching (of {total})" in bar(app)

        # Rows without a result (their cost unknown) are not cheap either.
        await press(pilot, "slash", "ctrl+u", *"cost<0.1", "enter")
        assert await until(pilot, lambda: shown(pilot) == [done.idem])
        await settle(pilot)
        assert f"rows 1–1 of 1 matching (of {total})" in bar(app)

        await press(pilot, "colon", *"filter cost>=0.1", "enter")  # the command line too
        assert await until(pilot, lambda: shown(pilot) == [consumed.idem])

        await press(pilot, "slash", "ctrl+u", *"cost>=0 status:done", "enter")
        assert await until(pilot, lambda: shown(pilot) == [done.idem])

        await press(pilot, "slash", "ctrl+u", *"cost>abc", "enter")
        assert await until(pilot, notified(pilot, "a number of US dollars"))
        await press(pilot, "escape")
        assert app.state.filter_text == "cost>=0 status:done"  # the filter before stays
        assert shown(pilot) == [done.idem]


async def test_cost_filter_with_an_unreadable_price_file_is_refused(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RECLAIM_PRICES", str(bad))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = len(shown(pilot))
        await press(pilot, "slash", *"cost>0", "enter")
        assert await until(pilot, notified(pilot, "a cost filter needs the price table"))
        assert app.state.filter_text == ""
        assert len(shown(pilot)) == total


async def test_a_cost_scan_the_operator_replaces_is_interrupted(seeded: Seeded) -> None:
    """Pricing every row walked is slow on a big ledger: a page read under a
    `cost` word that another filter replaces is aborted, as a text scan is."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        reader = app.main.feed.opened()
        read, interrupted = reader.page, []
        scanning = asyncio.Event()

        async def slow_page(view: View, *args: object, **kwargs: object) -> Page:
            if view.filter.words:
                scanning.set()
                await asyncio.Event().wait()  # a scan over millions of rows
            return await read(view, *args, **kwargs)  # type: ignore[arg-type]

        async def interrupt() -> None:
            interrupted.append(True)

        reader.page = slow_page  # type: ignore[method-assign]
        reader.interrupt = interrupt  # type: ignore[method-assign]
        await pilot.press("slash", *"cost>0", "enter")
        assert await until(pilot, scanning.is_set)
        await press(pilot, "slash", "ctrl+u", *"status:failed", "enter")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["failed"]])
        assert interrupted == [True]
