"""Pilot tests of the `:` command line, and of the panels that hide and resize
(at 80×24 too)."""

from __future__ import annotations

import asyncio

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.widgets.command_line import CommandLine, parse_command
from reclaim_tui.tui.widgets.detail_pane import DetailPane

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, shown, until
from .test_layout import assert_footer_fits, assert_tabs_fit


async def command(pilot: Pilot[None], line: str) -> None:
    await press(pilot, "colon")
    await pilot.press(*line, "enter")
    await settle(pilot)


def message(app: ReclaimApp) -> str:
    return str(app.main.query_one("#command-message").render())


def line_open(app: ReclaimApp) -> bool:
    return app.main.query_one(CommandLine).is_open


async def test_tab_names_switch_tabs(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "failed")
        assert app.state.tab == "failed"
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["failed"]])
        assert not line_open(app) and app.focused is app.table
        await command(pilot, "orphans")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["orphan"]])
        await command(pilot, "consumed")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["consumed"]])
        await command(pilot, "all")
        assert await until(pilot, lambda: len(shown(pilot)) == 8)


async def test_model_and_filter(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "model pro")
        pro = {seeded.keys["done"], seeded.keys["submitted2"]}
        assert await until(pilot, lambda: set(shown(pilot)) == pro)
        assert app.state.filter_text == "model:pro"
        await command(pilot, "filter solar")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted"]])
        await command(pilot, "filter explain")
        await command(pilot, "model pro")  # the text stays, the model is added
        assert app.state.filter_text == "explain model:pro"
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted2"]])
        await command(pilot, "filter")
        assert await until(pilot, lambda: len(shown(pilot)) == 8)


async def test_an_unknown_command_is_said_in_the_line_and_changes_nothing(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "2")
        before = shown(pilot)
        await command(pilot, "frobnicate now")
        assert line_open(app)
        assert "unknown command 'frobnicate now'" in message(app)
        assert app.state.tab == "reserving" and app.state.filter_text == ""
        assert shown(pilot) == before
        app.main.query_one("#command-input", Input).value = ""  # the line stays open
        await pilot.press(*"filter status:lost", "enter")  # a bad filter: said there too
        await settle(pilot)
        assert "unknown status 'lost'" in message(app)
        assert app.state.filter_text == ""
        await press(pilot, "escape")
        assert not line_open(app)
        assert app.focused is app.table


async def test_help_and_quit(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "help")
        assert isinstance(app.screen, HelpScreen)
        await press(pilot, "escape")
        await command(pilot, "q")
        for _ in range(1500):  # the effect, not a time: the app stops running
            if not app.is_running:
                break
            await asyncio.sleep(0.02)
        assert not app.is_running


async def test_tab_completes_a_command(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "colon")
        await pilot.press(*"canc")
        field = app.main.query_one("#command-input", Input)
        assert await until(pilot, lambda: field._suggestion == "cancelled")
        await press(pilot, "tab")
        assert field.value == "cancelled"
        await press(pilot, "enter")
        assert app.state.tab == "cancelled"


@pytest.mark.parametrize(
    ("line", "verb", "argument"),
    [(":failed", "tab", "failed"), ("orph", "tab", "orphans"), ("model  pro", "model", "pro")],
)
def test_parse_command(line: str, verb: str, argument: str) -> None:
    parsed = parse_command(line)
    assert (parsed.verb, parsed.argument) == (verb, argument)


def test_parse_command_refuses_unknown_words() -> None:
    for line in ("bogus", "failed now", "quit please", ""):
        with pytest.raises(ValueError, match="unknown command"):
            parse_command(line)


async def test_d_and_l_hide_the_panels_and_angle_brackets_resize_the_detail(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        detail, activity = app.main.query_one("#detail"), app.main.query_one("#activity")
        width = detail.size.width
        await press(pilot, "greater_than_sign")
        assert detail.size.width > width
        await press(pilot, "less_than_sign", "less_than_sign")
        assert detail.size.width < width
        height = app.table.size.height
        await press(pilot, "D")
        assert not detail.display and activity.display
        await press(pilot, "L")
        assert not app.main.query_one("#lower").display
        assert app.table.size.height > height  # the table takes the room
        await press(pilot, "enter")  # asked for in full, a hidden detail shows
        pane = app.query_one(DetailPane)
        assert app.screen.maximized is pane and pane.region.width == SIZE[0]
        await press(pilot, "escape", "D", "L")
        assert detail.display and activity.display


async def test_80_by_24_shows_ten_rows_tabs_and_footer(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        # Rows the eye sees: not the header, not the horizontal scrollbar.
        rows = app.table.scrollable_content_region.height - 1
        assert rows >= 10, f"the table shows {rows} rows"
        assert_tabs_fit(app)
        assert_footer_fits(app)
        await press(pilot, "colon")
        assert_tabs_fit(app)
        assert app.main.query_one(CommandLine).region.bottom <= 23  # above the footer
        await press(pilot, "escape", "f")
        follow = app.screen
        state = follow.query_one("#follow-state")
        timeline = follow.query_one("#follow-timeline")
        assert state.region.height >= 8 and timeline.region.height >= 5
        assert timeline.region.bottom <= 23
