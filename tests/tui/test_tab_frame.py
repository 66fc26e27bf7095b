"""A tab key highlights its tab in the frame that shows its window: the
tabs never name rows the table does not show, and the key draws one frame,
not one for the tab and another for its window (issue 39: the keys that
cost most, counted; nothing here times anything). A window that does not
come soon (a slow scan, a failed read) does not keep the tab from being
highlighted."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App
from textual.screen import Screen

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.status_tabs import StatusTabs
from reclaim_tui.tui.worker_wait import painted

from .conftest import Seeded
from .pilot_helpers import press, settle, until

#: One frame as drawn: (the tab highlighted, the tab of the window shown).
Frame = tuple[str, str]


def _other_tab(app: ReclaimApp) -> tuple[int, str]:
    state = app.main.state
    n = next(n for n in range(1, len(TABS)) if state.tab_count(TABS[n]) > 0)
    return n + 1, TABS[n].id


def _window_tab(app: ReclaimApp) -> str:
    """The tab whose rows the table shows (the window's view's statuses)."""
    view = app.main.state.window.view
    statuses = {s.value for s in view.statuses or ()}
    for tab in TABS:
        if tab.orphans == view.orphans and statuses == ({tab.status} if tab.status else set()):
            return tab.id
    raise AssertionError(view)


async def test_a_tab_key_highlights_its_tab_in_its_window_s_frame(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger between the key and its frames
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        key, tab = _other_tab(app)
        frames: list[Frame] = []
        real_display = App._display

        def display(self: App[None], screen: Screen[object], renderable: object) -> None:
            frames.append((tabs.active, _window_tab(app)))
            real_display(self, screen, renderable)  # type: ignore[arg-type]

        real_page = ConsoleReader.page

        async def page(self: ConsoleReader, *args: object, **kwargs: object) -> object:
            # A frame is drawn while the window is read, as on a big ledger.
            await painted(app, app.main)
            return await real_page(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(App, "_display", display)
        monkeypatch.setattr(ConsoleReader, "page", page)
        await press(pilot, str(key))
        assert tabs.active == tab and _window_tab(app) == tab
        assert frames, frames
        # Every frame shows the tab of the window it shows: the old one until
        # the new window comes, then the new one.
        assert all(active == shown for active, shown in frames), frames
        assert frames[-1] == (tab, tab), frames


async def test_a_tab_whose_window_does_not_come_is_highlighted_all_the_same(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        before = tabs.active
        key, tab = _other_tab(app)
        stuck = asyncio.Event()

        async def page(self: ConsoleReader, *args: object, **kwargs: object) -> object:
            await stuck.wait()  # a scan that never ends
            raise AssertionError("unreachable")

        monkeypatch.setattr(ConsoleReader, "page", page)
        await pilot.press(str(key))
        assert await until(pilot, lambda: tabs.active == tab)
        assert _window_tab(app) == before  # the old window is still shown
        assert app.main.state.tab == tab


async def test_a_tab_key_s_highlight_is_not_announced_a_click_still_switches(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        tabs = app.main.query_one(StatusTabs)
        announced: list[str | None] = []
        real = StatusTabs.post_message

        def post_message(self: StatusTabs, message: object) -> bool:
            if isinstance(message, StatusTabs.TabActivated):
                announced.append(message.tab.id)
            return real(self, message)  # type: ignore[arg-type]

        monkeypatch.setattr(StatusTabs, "post_message", post_message)
        key, tab = _other_tab(app)
        await press(pilot, str(key))
        assert tabs.active == tab and _window_tab(app) == tab
        assert announced == []  # the screen switched: nothing to tell it
        await pilot.click("#all")
        await settle(pilot)
        assert announced == ["all"]  # a click is the operator's switch
        assert await until(pilot, lambda: _window_tab(app) == "all")
        assert app.main.state.tab == "all" and tabs.active == "all"
