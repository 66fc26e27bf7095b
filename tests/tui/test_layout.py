"""The console at the sizes operators run it: 160×48 shows everything, 80×24
stays usable (issue 15, item 5)."""

from __future__ import annotations

from collections import Counter

from textual.content import Content
from textual.widgets import Tabs
from textual.widgets._footer import FooterKey

from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.messages import TickFinished
from reclaim_tui.tui.widgets.loop_bar import LoopBar

from .conftest import Seeded
from .pilot_helpers import press, settle, until

BUSY = PassReport(
    Counter(
        inserted=120, sent=96, adopted=3, polled=1_250, done=40, consumed=38, errors=4, deferred=2
    )
)


def bar_content(app: ReclaimApp) -> Content:
    content = app.main.query_one(LoopBar).visual
    assert isinstance(content, Content)
    return content


def assert_bar_fits(app: ReclaimApp, *parts: str) -> None:
    bar, content = app.main.query_one(LoopBar), bar_content(app)
    assert content.cell_length <= bar.content_region.width, content.plain
    for part in parts:
        assert part in content.plain, content.plain


def assert_tabs_fit(app: ReclaimApp) -> None:
    scroll = app.main.query_one(Tabs).query_one("#tabs-scroll")
    assert scroll.max_scroll_x == 0 and scroll.scroll_x == 0, "some tabs are out of view"


def assert_footer_fits(app: ReclaimApp) -> None:
    keys = list(app.main.query(FooterKey))
    palette = [k for k in keys if k.has_class("-command-palette")]
    others = [k for k in keys if not k.has_class("-command-palette")]
    right = max(k.region.right for k in others)
    assert right <= min((k.region.x for k in palette), default=app.size.width), (
        f"footer keys run to column {right}, under the palette's key"
    )


async def a_busy_pass(app: ReclaimApp, seeded: Seeded) -> None:
    app.main.post_message(TickFinished(BUSY, 0.42, seeded.clock.now()))


async def test_160_columns_show_the_whole_bar_and_every_panel(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        await a_busy_pass(app, seeded)
        assert await until(pilot, lambda: "last pass 0.42s" in bar_content(app).plain)
        await settle(pilot)
        assert_bar_fits(app, "8 marked", "rows 1–8 of 8", "API degraded")
        assert_tabs_fit(app)
        assert_footer_fits(app)
        for panel in ("#detail", "#throughput", "#log"):
            assert app.main.query_one(panel).display, panel
        assert app.table.size.height - 1 >= 8  # every row, under the header


async def test_80_by_24_is_usable(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        await a_busy_pass(app, seeded)
        assert await until(pilot, lambda: "API degraded" in bar_content(app).plain)
        await settle(pilot)
        assert app.table.size.height - 1 >= 8, "the table shows too few rows"
        assert_bar_fits(app, "8 marked", "rows 1–8 of 8")
        assert_tabs_fit(app)
        assert_footer_fits(app)
        await press(pilot, "8")
        assert_tabs_fit(app)


async def test_a_terminal_resized_to_80_by_24_fits_again(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await press(pilot, "A")
        await a_busy_pass(app, seeded)
        await settle(pilot)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert await until(pilot, lambda: app.main.has_class("-short"))
        await settle(pilot)
        assert app.table.size.height - 1 >= 8
        assert_bar_fits(app, "8 marked")
        assert_tabs_fit(app)
        assert_footer_fits(app)


async def test_every_dialog_fits_80_by_24(seeded: Seeded) -> None:
    """The submit dialog was 84 columns wide: at 80 its right border and the
    JSONL tab's name were cut off."""
    app = seeded.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key in ("s", "ctrl+e", "question_mark"):
            await press(pilot, key)
            dialog = app.screen.children[0]  # the dialog's box
            region = dialog.region
            assert region.x >= 0 and region.right <= 80, (key, region)
            assert region.y >= 0 and region.bottom <= 24, (key, region)
            await press(pilot, "escape")
            assert app.screen is app.main, key
