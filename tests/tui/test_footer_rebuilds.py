"""The footer is rebuilt only when what it shows changes (issue 27, item 6).

Textual rebuilds a footer on every change of the screen's bindings; at the
console's start that was three times, ~20 ms of UI CPU each, for one and
the same footer. What it shows must still follow every real change: the
keys of a focused input, a narrower terminal, a dialog and back."""

from __future__ import annotations

from typing import Any

import pytest
from textual._context import active_message_pump
from textual.compose import compose
from textual.widget import Widget
from textual.widgets._footer import FooterKey

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.widgets.footer import ConsoleFooter

from .conftest import Seeded
from .pilot_helpers import press, settle


def rebuilds_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Calls of Textual's own rebuild on a console footer (the one the
    footer's own `recompose` skips or passes on to)."""
    counted: list[int] = []
    real = Widget.recompose

    async def counting(self: Widget) -> None:
        if isinstance(self, ConsoleFooter):
            counted.append(1)
        await real(self)

    monkeypatch.setattr(Widget, "recompose", counting)
    return counted


def keys(widgets: list[Any]) -> list[tuple[str, str, bool]]:
    return [(w.key_display, w.description, w.disabled) for w in widgets if isinstance(w, FooterKey)]


def assert_footer_current(app: ReclaimApp) -> None:
    """The footer on screen is what a rebuild now would make."""
    footer = app.screen.query_one(ConsoleFooter)
    token = active_message_pump.set(footer)  # as when Textual composes it
    try:
        fresh = compose(footer)
    finally:
        active_message_pump.reset(token)
    assert keys(list(footer.query(FooterKey))) == keys(fresh)


async def test_the_footer_is_built_once_at_start(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = rebuilds_counted(monkeypatch)
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert app.table.row_count > 0
        assert_footer_current(app)
    # Three on the code before (the same footer each time).
    assert len(counted) == 1


async def test_the_footer_follows_what_changes(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        assert_footer_current(app)
        wide = keys(list(app.main.query(FooterKey)))
        await press(pilot, "slash")  # the filter's input has the focus
        await settle(pilot)
        assert_footer_current(app)
        await press(pilot, "escape")
        await settle(pilot)
        assert_footer_current(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert_footer_current(app)
        narrow = keys(list(app.main.query(FooterKey)))
        assert narrow != wide  # titles dropped to fit
        await press(pilot, "question_mark")  # a dialog, and back
        await settle(pilot)
        await press(pilot, "escape")
        await settle(pilot)
        assert_footer_current(app)
        await pilot.resize_terminal(160, 48)
        await settle(pilot)
        assert keys(list(app.main.query(FooterKey))) == wide
