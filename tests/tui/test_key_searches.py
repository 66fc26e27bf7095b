"""A key that brings a new window searches no widgets: the widgets it
updates are found without matching the screen's widgets against a
selector (issue 39: the keys that cost most, counted; nothing here times
anything). The loop bar, shown again with every window and every count,
was found by a query by type that matched every widget of the screen."""

from __future__ import annotations

import pytest
from textual.css.query import DOMQuery

from reclaim_tui.tui.tabs import TABS

from .conftest import Seeded
from .pilot_helpers import press, settle


@pytest.mark.parametrize("key", ["tab", "G"])
async def test_a_window_key_searches_no_widgets(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # only the key's own work between the key and its frames
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        searches: list[str] = []
        real = DOMQuery.nodes.fget  # type: ignore[attr-defined]

        def nodes(self: DOMQuery[object]) -> object:
            searches.append(repr(self))
            return real(self)

        monkeypatch.setattr(DOMQuery, "nodes", property(nodes))
        renders = app.table.renders
        if key == "tab":
            state = app.main.state
            n = next(n for n in range(1, len(TABS)) if state.tab_count(TABS[n]) > 0)
            await press(pilot, str(n + 1))
        else:
            await press(pilot, key)
        assert app.table.renders > renders  # a new window was shown
        assert searches == []
