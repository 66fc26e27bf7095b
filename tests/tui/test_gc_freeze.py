"""The console freezes what is alive once its screen is up (issue 14: a full
collection scanned ~200,000 objects, ~200 ms of the UI thread every few
seconds) and gives them back to the collector when it closes."""

from __future__ import annotations

import gc

import pytest
from textual.app import ComposeResult

from reclaim_tui.tui.screens.main import MainScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


async def test_the_startup_objects_are_frozen_while_the_console_runs(seeded: Seeded) -> None:
    assert gc.get_freeze_count() == 0
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the imports and the widget tree
        await press(pilot, "down", "2", "1")
        # Frozen once, not on every page (frozen objects freed since: fewer).
        assert gc.get_freeze_count() <= frozen
    assert gc.get_freeze_count() == 0


async def test_a_console_told_not_to_freeze_leaves_the_collector_alone(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.freeze_gc = False
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert gc.get_freeze_count() == 0


async def test_the_imports_are_frozen_before_the_screen_is_built(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full collection during the first paint scanned every object the
    imports made: 120–150 ms of a 1M-row console's first paint, in the runs
    where the collector's counters came due then (issue 27, item 6)."""
    seen: list[int] = []
    real = MainScreen.compose

    def compose(self: MainScreen) -> ComposeResult:
        seen.append(gc.get_freeze_count())
        return real(self)

    monkeypatch.setattr(MainScreen, "compose", compose)
    for freeze in (True, False):
        app = seeded.app()
        app.config.freeze_gc = freeze
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
        assert gc.get_freeze_count() == 0
    assert seen[0] > 10_000  # the imports
    assert seen[1] == 0  # told not to freeze: left alone
