"""The costs and charts screens, pushed on a ledger of known rows: the totals
they show and the points each chart was given (not its pixels)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen
from textual.widgets import DataTable, Static

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.costs import load_prices
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Status
from reclaim_tui.tui.screens.charts import (
    ActivityChart,
    ChartsScreen,
    DurationChart,
    ModelChart,
    chart_loader,
)
from reclaim_tui.tui.screens.costs import CostsScreen, cost_loader
from tests.helpers.ledger_rows import put_row
from tests.tui.pilot_helpers import until

PRICES = load_prices(None, environ={})
USAGE = {"total_input_tokens": 1000, "total_output_tokens": 1000}  # flash: $0.0035


class Host(App[None]):
    """Nothing but the screen under test."""

    def __init__(self, screen: Screen[None]) -> None:
        super().__init__()
        self.first = screen

    def on_mount(self) -> None:
        self.push_screen(self.first)


@pytest.fixture
async def seeded(tmp_path: Path) -> AsyncIterator[tuple[Ledger, ManualClock]]:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    await put_row(ledger, clock, usage=USAGE, runs=5)
    await put_row(ledger, clock, usage=USAGE, runs=45)
    await put_row(ledger, clock, model="gemini-pro-latest", end=Status.FAILED, runs=20,
                  usage={"total_input_tokens": 1000})  # fmt: skip
    await put_row(ledger, clock, model="mystery-model", usage=USAGE, runs=5)
    await put_row(ledger, clock, end=Status.SUBMITTED)
    yield ledger, clock
    await ledger.close()


def _text(screen: Screen[None], selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


def _column(table: DataTable[object], index: int) -> list[str]:
    return [str(table.get_row_at(r)[index]) for r in range(table.row_count)]


async def test_costs_screen_shows_totals_and_groups(seeded: tuple[Ledger, ManualClock]) -> None:
    ledger, _ = seeded
    screen = CostsScreen(cost_loader(ledger, PRICES), PRICES)
    app = Host(screen)
    async with app.run_test(size=(130, 40)) as pilot:
        table: DataTable[object] = screen.query_one(DataTable)
        assert await until(pilot, lambda: table.row_count == 3)
        assert _column(table, 0) == ["submitted", "consumed", "failed"]
        assert _column(table, 7) == ["$0.0000", "$0.0070", "$0.0020"]
        total = _text(screen, "#costs-total")
        assert "total $0.0090 over 3 priced rows of 5" in total
        assert "unknown price: 1 row (mystery-model)" in total
        assert "as of 2026-12-01" in _text(screen, "#costs-heading")
        await pilot.press("b")
        assert await until(pilot, lambda: "mystery-model" in _column(table, 0))
        assert "by model" in _text(screen, "#costs-heading")
        mystery = _column(table, 0).index("mystery-model")
        assert str(table.get_row_at(mystery)[3]) == "1"  # unknown, not $0
        await pilot.press("b")
        assert await until(pilot, lambda: _column(table, 0) == ["2027-01-15"])
        await pilot.press("escape")
        assert await until(pilot, lambda: app.screen is not screen)


async def test_charts_screen_draws_the_ranges_and_rereads(
    seeded: tuple[Ledger, ManualClock],
) -> None:
    ledger, clock = seeded
    screen = ChartsScreen(chart_loader(ledger, PRICES), every=0.1)
    app = Host(screen)
    async with app.run_test(size=(140, 44)) as pilot:
        activity = screen.query_one(ActivityChart)
        assert await until(pilot, lambda: bool(activity.points))
        assert len(activity.points["completed"]) == 60
        assert sum(activity.points["completed"]) == 3
        assert sum(activity.points["failed"]) == 1
        assert activity.points["completed"][-1] >= 1  # the newest minute is the last point
        durations = screen.query_one(DurationChart)
        assert dict(zip(durations.labels, durations.points["jobs"], strict=True))["<10s"] == 2
        models = screen.query_one(ModelChart)
        flash = models.labels.index("gemini-flash-latest")
        assert models.points["completed"][flash] == 2
        assert models.points["failed"][models.labels.index("gemini-pro-latest")] == 1
        assert "mystery-model: 1 done, 0 failed · $0.0000 + 1 of unknown price" in _text(
            screen, "#chart-models-text"
        )
        await pilot.press("t")
        assert await until(pilot, lambda: len(activity.points["completed"]) == 96)
        assert screen.data is not None and screen.data.range == "day"
        await put_row(ledger, clock, runs=1)  # re-read while open: a fourth completion
        assert await until(pilot, lambda: sum(activity.points["completed"]) == 4)
        await pilot.press("escape")
        assert await until(pilot, lambda: app.screen is not screen)
