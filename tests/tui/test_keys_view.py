"""Pilot tests of the keys that change what the console shows (no ledger writes)."""

from __future__ import annotations

import asyncio

from textual.command import CommandList

from reclaim_tui.core.models import Actor, Status
from reclaim_tui.tui.format import age
from reclaim_tui.tui.keymap import KEYS
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.loop_log import LoopLog

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, shown, until


async def test_first_paint_counts_and_every_status(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        statuses = {r.status for r in app.table.rows_shown}
        assert statuses == set(Status)
        counts = {
            "consumed": 1,
            "done": 1,
            "submitted": 2,
            "failed": 1,
            "cancelled": 1,
            "reserving": 2,
        }
        assert await until(pilot, lambda: app.state.counts == counts)
        assert app.state.orphans == 1
        assert app.table.current_idem() is not None


async def test_number_keys_switch_status_tabs(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        expected = {
            "all": 8,
            "reserving": 2,
            "orphans": 1,
            "submitted": 2,
            "done": 1,
            "consumed": 1,
            "failed": 1,
            "cancelled": 1,
        }
        for number, tab in enumerate(TABS, start=1):
            await press(pilot, str(number))
            assert app.state.tab == tab.id
            assert await until(pilot, lambda: app.state.window.view == app.state.view())
            assert len(shown(pilot)) == expected[tab.id], tab.id
            if tab.status:
                assert {r.status.value for r in app.table.rows_shown} == {tab.status}
        await press(pilot, "3")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["orphan"]])


async def test_slash_filters_by_text_and_tokens(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        await pilot.press(*"solar", "enter")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted"]])
        await press(pilot, "slash")
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.press(*"model:pro", "enter")
        pro = {seeded.keys["done"], seeded.keys["submitted2"]}
        assert await until(pilot, lambda: set(shown(pilot)) == pro)
        await press(pilot, "slash")
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.press(*"status:failed", "enter")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["failed"]])
        await press(pilot, "escape")  # clears the filter
        assert await until(pilot, lambda: len(shown(pilot)) == 8)


async def test_bad_status_token_is_refused(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        await pilot.press(*"status:lost", "enter")
        assert await until(pilot, notified(pilot, "unknown status 'lost'"))
        await settle(pilot)
        assert app.state.filter_text == ""
        assert len(shown(pilot)) == 8


async def test_enter_opens_detail_and_escape_closes(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "enter")
        pane = app.query_one(DetailPane)
        assert app.screen.maximized is pane
        text = str(pane.query_one("#detail-body").render())
        assert seeded.keys["consumed"] in text and "Result" in text and "sink delivered" in text
        await press(pilot, "escape")
        assert app.screen.maximized is None


async def test_question_mark_lists_every_key(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("Static").render())
        for spec in KEYS:
            assert spec.help in text, spec.help
        await press(pilot, "escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_t_cycles_sort_and_order_follows(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        oldest_first = shown(pilot)
        await press(pilot, "t")
        assert app.state.sort_index == 1
        assert await until(pilot, lambda: shown(pilot) == list(reversed(oldest_first)))
        await press(pilot, "t")
        assert await until(pilot, lambda: app.state.window.view == app.state.view())
        rows = app.table.rows_shown
        assert [r.updated_at for r in rows] == sorted((r.updated_at for r in rows), reverse=True)
        await press(pilot, "t", "t")
        assert app.state.sort_index == 0


async def test_ctrl_r_shows_changes_made_elsewhere(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        from reclaim_tui.core.engine.engine import Engine
        from reclaim_tui.core.ledger.opening import open_ledger
        from reclaim_tui.core.sinks import DirectorySink

        # A cron tick in another "process" cancels a row.
        ledger = await open_ledger(seeded.db, clock=seeded.clock)
        other = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner="cron|2|x")
        await other.operator.cancel(seeded.keys["submitted2"], actor=Actor.CLI)
        await ledger.close()
        await press(pilot, "ctrl+r")

        def cancelled_shown() -> bool:
            shown = {r.idem: r.status for r in app.table.rows_shown}
            return shown.get(seeded.keys["submitted2"]) == Status.CANCELLED

        # The re-read crosses a worker and a message; on a loaded machine it
        # can land after the first settle, so wait for the effect itself.
        assert await until(pilot, cancelled_shown)
        assert await until(pilot, lambda: app.state.counts["cancelled"] == 2)


async def test_plus_minus_change_the_interval(seeded: Seeded) -> None:
    app = seeded.app(interval=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "plus")
        assert app.pace.interval == 5.0
        await press(pilot, "minus", "minus")
        assert app.pace.interval == 1.0


async def test_q_quits(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        for _ in range(1500):  # the effect, not a time: the app stops running
            if not app.is_running:
                break
            await asyncio.sleep(0.02)
        assert not app.is_running


async def test_command_palette_runs_actions(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+p")
        await pilot.press(*"Tab failed")
        commands = app.screen.query_one(CommandList)

        def tab_failed_on_top() -> bool:
            if not commands.option_count or commands.highlighted != 0:
                return False
            return "Tab failed" in str(commands.get_option_at_index(0).prompt)

        # The palette gathers its hits in a worker, in batches: wait for them.
        assert await until(pilot, tab_failed_on_top)
        await settle(pilot)
        assert tab_failed_on_top()
        await press(pilot, "enter")
        assert app.state.tab == "failed"
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["failed"]])


async def test_escape_from_the_full_screen_detail_gives_the_table_its_keys(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "enter")
        assert app.screen.maximized is app.query_one(DetailPane)
        await press(pilot, "escape")
        assert app.screen.maximized is None
        assert app.focused is app.table
        row = app.table.cursor_row
        await press(pilot, "down")
        assert app.table.cursor_row == row + 1
        await press(pilot, "enter")
        assert app.screen.maximized is app.query_one(DetailPane)


async def test_enter_closes_the_full_screen_detail_too(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert app.screen.maximized is app.query_one(DetailPane)
        await press(pilot, "enter")
        assert app.screen.maximized is None
        assert app.focused is app.table


def _detail_text(app: object) -> str:
    return str(app.query_one(DetailPane).query_one("#detail-body").render())  # type: ignore[attr-defined]


async def test_the_detail_ages_with_the_table(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        row = app.table.current_row()
        assert row is not None
        seeded.clock.advance(15)
        await press(pilot, "ctrl+r")  # the table redraws its ages; so must the detail
        shown = age(seeded.clock.now() - row.state_since)
        cell = str(app.table.get_cell(row.idem, "age"))
        assert cell == shown
        assert f"consumed for {shown}" in _detail_text(app)


async def test_the_detail_says_when_its_row_left_the_tab(seeded: Seeded) -> None:
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.sinks import DirectorySink

    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "4")  # submitted
        await select(pilot, seeded.keys["submitted"])
        # A cron tick in another process cancels the highlighted row.
        ledger = await open_ledger(seeded.db, clock=seeded.clock)
        other = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner="cron|2|x")
        await other.operator.cancel(seeded.keys["submitted"], actor=Actor.CLI)
        await ledger.close()
        await press(pilot, "ctrl+r")
        assert await until(pilot, lambda: shown(pilot) == [seeded.keys["submitted2"]])
        await settle(pilot)
        pane = app.query_one(DetailPane)
        assert pane.shown_idem == app.table.current_idem()  # what r / c would act on
        text = _detail_text(app)
        assert f"{seeded.keys['submitted']} left this tab (now cancelled)" in text, text
        await press(pilot, "1")  # the operator moves on: the note goes
        assert "left this tab" not in _detail_text(app)


async def test_the_full_screen_detail_fits_the_screen(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        pane = app.query_one(DetailPane)
        assert app.screen.maximized is pane
        assert pane.region.x >= 0 and pane.region.right <= SIZE[0], pane.region
        assert pane.region.width == SIZE[0]  # all of it, its right border too


async def test_log_lines_written_under_the_full_screen_detail_wrap_at_the_logs_width(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(LoopLog)
        before = len(log.lines)
        await press(pilot, "enter")
        text = "a line written while the detail fills the screen " * 3
        log.line(seeded.clock.now(), text)
        await press(pilot, "escape")
        width = log.scrollable_content_region.width
        assert max(strip.cell_length for strip in log.lines) <= width
        # 160 characters in a log 40-odd wide: 4 lines, not 9 at 20 wide.
        assert len(log.lines) - before <= -(-(len(text) + 10) // (width - 2)), log.lines[before:]


async def test_a_refresh_that_reorders_the_rows_keeps_the_cursor_on_its_row(
    seeded: Seeded,
) -> None:
    """A refresh whose rows come in another order (a row's sort key changed
    elsewhere) leaves the cursor on the row it was on, not on whatever row now
    sits at its old index (CI's flake in test_console_keys_drive_the_worker_process:
    `select` put the cursor on a row, the loop's refresh reordered the window)."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = list(app.table.rows_shown)
        assert len(rows) >= 3
        await select(pilot, rows[1].idem)
        reordered = [rows[1], rows[0], *rows[2:]][::-1]
        now = app.config.clock.now()
        app.table.show_rows(reordered, now, set())
        assert app.table.current_idem() == rows[1].idem
        assert app.table.cursor_row == reordered.index(rows[1])
        # A row that left the window: the cursor stays at its index (on the
        # last row when it was the last).
        gone = [r for r in reordered if r.idem != rows[1].idem]
        app.table.show_rows(gone, now, set())
        assert app.table.cursor_row == min(reordered.index(rows[1]), len(gone) - 1)
