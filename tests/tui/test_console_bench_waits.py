"""benchmarks/console_load.py's key figure is the console's UI CPU from a key
to its effect shown: the benchmark's own waiting must add none of it. It
polled every 0.5 ms (an event-loop turn each, counted as the console's
CPU); it now looks only when a step that can show the effect has run."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .conftest import Seeded
from .pilot_helpers import EFFECT_LIMIT, SIZE, settle

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture
def console_load() -> Any:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import console_load
    finally:
        sys.path.remove(str(BENCHMARKS))
    return console_load


def _count_own_sleeps(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[float]:
    """The sleeps `module`'s own code awaits, from now on (Textual's are not counted)."""
    slept: list[float] = []
    real = asyncio.sleep

    def sleep(delay: float, result: Any = None) -> Coroutine[Any, Any, Any]:
        if sys._getframe(1).f_globals.get("__name__") == module.__name__:
            slept.append(delay)
        return real(delay, result)

    monkeypatch.setattr(module.asyncio, "sleep", sleep)
    return slept


async def test_a_key_s_wait_polls_nothing(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, console_load: Any
) -> None:
    monkeypatch.setattr(console_load, "TIMEOUTS", [])
    # A loaded machine is slow, not wrong: only an effect never shown times out.
    monkeypatch.setattr(console_load, "KEY_LIMIT", EFFECT_LIMIT, raising=False)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        slept = _count_own_sleeps(monkeypatch, console_load)
        keys = [("down", "cursor"), ("2", "tab"), ("1", "tab"), ("down", "cursor")]
        keys.append(("up", "cursor"))
        for key, kind in keys:
            await console_load.press_and_wait(app, key, kind)
        await console_load.apply_filter(app, "status:failed")
        assert slept == []
        assert console_load.TIMEOUTS == []
        assert app.query_one(LedgerTable).row_count > 0
