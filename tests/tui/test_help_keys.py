"""`G` / `End` go to the end of the help, `g` / `Home` back to its top, as in
the table (issue 25, item 8: they did nothing in help)."""

from __future__ import annotations

from textual.containers import VerticalScroll

from reclaim_tui.tui.screens.help import HelpScreen

from .conftest import Seeded
from .pilot_helpers import press, settle, until


async def test_G_and_g_move_to_the_end_and_the_top_of_the_help(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        scroll = app.screen.query_one(VerticalScroll)
        assert scroll.max_scroll_y > 0, "the help is longer than 24 lines"
        await press(pilot, "G")
        assert await until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)
        await press(pilot, "g")
        assert await until(pilot, lambda: scroll.scroll_y == 0)
        await press(pilot, "end")
        assert await until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y)
