"""Keys typed right after `/` or `:` — in one write, as a paste without
bracketing or a laggy link delivers them — go to the line that opened, never
to the table's action keys (issue 25, defect 1)."""

from __future__ import annotations

from textual import events
from textual.pilot import Pilot

from reclaim_tui.core.models import Status
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.costs import CostsScreen
from reclaim_tui.tui.screens.submit import SubmitScreen
from reclaim_tui.tui.widgets.command_line import CommandLine
from reclaim_tui.tui.widgets.filter_bar import FilterBar

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, select, settle, until


def write_at_once(pilot: Pilot[None], *keys: tuple[str, str | None]) -> None:
    """Every key in the app's queue in the same event-loop turn: nothing runs
    between two of them (pilot.press waits for idle after each)."""
    driver = pilot.app._driver
    assert driver is not None
    for key, character in keys:
        event = events.Key(key, character)
        event.set_sender(pilot.app)
        driver.send_message(event)


def text(chars: str) -> list[tuple[str, str | None]]:
    return [(c, c) for c in chars]


async def test_slash_then_err_in_one_write_types_err_and_retries_nothing(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        write_at_once(pilot, ("slash", "/"), *text("err"))
        await settle(pilot)
        bar = app.query_one(FilterBar)
        assert bar.value == "err"
        assert app.focused is bar
        assert not notified(pilot, "no stored result")()  # `e` did not open the row
        write_at_once(pilot, ("enter", None))
        assert await until(pilot, lambda: app.state.filter_text == "err")
    assert (await seeded.get("failed")).status == Status.FAILED


async def test_colon_costs_in_one_write_runs_the_command_and_no_key_of_it(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        write_at_once(pilot, ("colon", ":"), *text("costs"), ("enter", None))
        await settle(pilot)
        assert await until(pilot, lambda: isinstance(app.screen, CostsScreen))
        # `o` would have asked to recover the orphan, `s` opened Submit.
        assert not any(isinstance(s, ConfirmScreen | SubmitScreen) for s in app.screen_stack)
        assert not app.query_one(CommandLine).is_open
