"""The tabs draw the active tab's look themselves, not by Textual's
`-active` class (a class switched restyles the two tabs at every tab key:
issue 39, item 5); what the screen shows is the same, pixel for pixel, as
with Textual's class, at both sizes the console is laid out for. A click
still switches with the same look. The underline's line is drawn once for
each place it takes, as Textual draws it there."""

from __future__ import annotations

import pytest
from textual.app import RenderResult
from textual.widget import Widget
from textual.widgets._tabs import Underline

from reclaim_tui.tui.widgets.status_tabs import StatusTab, StatusTabs

from .conftest import Seeded
from .pilot_helpers import press, settle


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_drawn_active_look_is_textual_s_active_look(
    seeded: Seeded, size: tuple[int, int]
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # nothing changes between the two screens
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await press(pilot, "2")
        tabs = app.main.query_one(StatusTabs)
        tab = tabs.tabs_by_id[tabs.active]
        assert isinstance(tab, StatusTab) and tab.lit and not tab.has_class("-active")
        drawn = app.export_screenshot()
        # The same tab as Textual draws its active one.
        tab.light(False)
        tab.add_class("-active")
        await settle(pilot)
        assert app.export_screenshot() == drawn
        # and not lit, nor with the class: another look (the test can fail)
        tab.remove_class("-active")
        await settle(pilot)
        assert app.export_screenshot() != drawn


async def test_the_drawn_look_follows_a_new_theme(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "2")
        app.theme = "textual-light"
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        tab = tabs.tabs_by_id[tabs.active]
        assert isinstance(tab, StatusTab) and tab.lit
        drawn = app.export_screenshot()
        tab.light(False)
        tab.add_class("-active")
        await settle(pilot)
        assert app.export_screenshot() == drawn


async def test_a_click_switches_with_the_same_look(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        await pilot.click("#reserving")
        await settle(pilot)
        assert tabs.active == "reserving"
        drawn = [t.id for t in tabs.query(StatusTab) if t.lit or t.has_class("-active")]
        assert drawn == ["reserving"]
        await press(pilot, "1")
        drawn = [t.id for t in tabs.query(StatusTab) if t.lit or t.has_class("-active")]
        assert drawn == ["all"]


async def test_the_underline_is_drawn_once_for_each_place_it_takes(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual draws the underline anew (through Rich) at every move; it
    takes one of eight places at a width, each line kept once drawn, and
    the line kept is the one Textual draws there."""
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        for number in "12345678":
            await press(pilot, number)
        drawn = 0
        real = Underline.render

        def render(self: Underline) -> RenderResult:
            nonlocal drawn
            drawn += 1
            return real(self)

        monkeypatch.setattr(Underline, "render", render)
        for number in "2741":
            await press(pilot, number)
            underline = app.main.query_one(Underline)
            kept = underline.render_line(0)
            underline.refresh()
            assert Widget.render_line(underline, 0) == kept  # as Textual draws it
            drawn -= 1  # that one was the test's own
        monkeypatch.undo()
        assert drawn == 0
