"""The loop bar says how many rows a filtered view shows of what (issue 25,
item 8: under a filter it dropped "of N" and said only `rows 1–3`)."""

from __future__ import annotations

from .conftest import Seeded
from .pilot_helpers import SIZE, settle, shown, until


async def test_a_filtered_view_says_of_how_many(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        total = len(shown(pilot))
        app.main.state.set_filter("status:failed")
        app.main.feed.load_page("first", cursor="top")
        assert await until(pilot, lambda: len(shown(pilot)) == 1)
        await settle(pilot)
        assert app.state.window_text() == f"rows 1–1 of 1 matching (of {total})"
