"""An empty enter in the Adopt (`a`) or Answer (`w`) dialog closed it
silently, as if it had acted (issue 25, item 8). It stays open and says so."""

from __future__ import annotations

from textual.widgets import Input

from reclaim_tui.tui.screens.ask import AskScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until


async def test_an_empty_enter_in_adopt_is_said_and_the_dialog_stays(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["orphan"])
        await press(pilot, "a")
        assert isinstance(app.screen, AskScreen)
        app.screen.query_one(Input).value = "   "
        await press(pilot, "enter")
        await settle(pilot)
        assert isinstance(app.screen, AskScreen)
        said = str(app.screen.query_one("#ask-error").render())
        assert "Nothing typed" in said, said
        await press(pilot, "escape")
        assert await until(pilot, lambda: not isinstance(app.screen, AskScreen))
    assert await seeded.snapshot() == before
