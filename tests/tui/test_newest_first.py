"""Rows another process adds appear in a newest-first view (issue 25,
defect 4): with `t` (newest first) or "updated, latest first", a refresh
read the window again from its old first row, so the new rows — which sort
before it — stayed hidden, the bar said `rows 4–9 of 9`, and only `g` showed
them. A window at the top of its view stays at the top."""

from __future__ import annotations

import pytest

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.console.views import SORTS
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.sinks import DirectorySink

from .conftest import Seeded, spec
from .pilot_helpers import SIZE, press, settle, shown, until


async def add_rows(seeded: Seeded, texts: list[str]) -> list[str]:
    """Reserve new jobs through an engine of another process (its own owner)."""
    seeded.clock.advance(60)
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        engine = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner="other|2|x")
        await engine.submit([spec(t) for t in texts], send=False)
    finally:
        await ledger.close()
    return [idempotency_key(spec(t)) for t in texts]


@pytest.mark.parametrize(
    ("keys", "sort", "tab"),
    [
        (("t",), 1, "all"),
        (("t", "t"), 2, "all"),
        (("2", "t"), 1, "reserving"),
    ],
)
async def test_new_rows_show_at_the_top_of_a_newest_first_view(
    seeded: Seeded, keys: tuple[str, ...], sort: int, tab: str
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            await press(pilot, key)
        assert app.state.sort_index == sort and app.state.tab == tab
        before = shown(pilot)
        new = await add_rows(seeded, ["a new job from a cron tick", "another new job"])
        await press(pilot, "ctrl+r")
        total = len(before) + len(new)
        assert await until(pilot, lambda: len(shown(pilot)) == total), (shown(pilot), SORTS[sort])
        assert set(shown(pilot)[:2]) == set(new), shown(pilot)
        assert app.state.window_text() == f"rows 1–{total} of {total}"
