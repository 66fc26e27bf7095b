"""The console's smaller findings of issue 32, item 14: what the help says
works, the dialogs say what they do, the table and the bar keep what an
operator looks for."""

from __future__ import annotations

import re
from pathlib import Path

from textual.content import Content
from textual.widgets import TextArea

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from reclaim_tui.tui import columns
from reclaim_tui.tui.keymap import KEYS
from reclaim_tui.tui.screens.ask import APPROVAL, AskScreen, PlanScreen
from reclaim_tui.tui.widgets.command_line import parse_command
from reclaim_tui.tui.widgets.loop_bar import LoopBarState, bar_parts, fit

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, until
from .test_answer import _hold_for_an_answer, _plan_ready
from .test_ledger_switch import command


def test_every_sort_command_the_help_names_is_accepted() -> None:
    """The help said `:sort last desc`, which was refused."""
    helps = [k.help for k in KEYS if k.action.startswith("sort_by(")]
    named = [m.group(1) for h in helps for m in [re.search(r":sort (\w+ desc)", h)] if m]
    assert len(named) == len(helps) == 9
    for argument in named:
        assert parse_command(f"sort {argument}").verb == "sort"


def test_the_help_says_what_space_does() -> None:
    """space marks and goes down one (a run of marks, as in mc, ranger, mutt)."""
    (space,) = [k for k in KEYS if k.action == "toggle_mark"]
    assert space.help == "Mark / unmark the row and go down one"


async def test_an_empty_answer_says_what_to_type(seeded: Seeded) -> None:
    await _hold_for_an_answer(seeded, "submitted")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "w")
        assert isinstance(app.screen, AskScreen)
        await press(pilot, "enter")
        said = str(app.screen.query_one("#ask-error").render())
        assert said == "Nothing typed: type your answer, or esc to cancel.", said


async def test_enter_with_nothing_typed_approves_a_plan(seeded: Seeded) -> None:
    first = await _plan_ready(seeded, "submitted", "1. Search. 2. Write.")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "w")
        assert isinstance(app.screen, PlanScreen)
        await press(pilot, "enter")  # "enter approves", the dialog says

        async def answered() -> bool:
            return (await seeded.get("submitted")).handle != first

        assert await until(pilot, answered)
    row = await seeded.get("submitted")
    follow = seeded.fake.remotes[row.handle]  # type: ignore[index]
    assert follow.spec.input == APPROVAL
    assert follow.spec.config["previous_interaction_id"] == first


def _saved_interval(config_home: Path) -> None:
    path = config_home / "reclaim-tui" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text("interval = 10.0\n")


async def test_the_interval_note_only_when_interval_was_typed(
    seeded: Seeded, config_home: Path
) -> None:
    _saved_interval(config_home)
    for kwargs in ({}, {"readonly": True, "interval_given": True}):
        app = seeded.app(interval=2.0, **kwargs)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert not notified(pilot, "wins over --interval")(), kwargs


def test_a_wide_table_shows_the_key_whole() -> None:
    """Keys were cut at 12 characters at 160 columns."""
    key = "f" * 32
    assert columns.key_width(140) == 12  # no wider below (the 80-140 layouts unchanged)
    assert columns.key_width(160) >= len(key)
    assert columns.key_width(300) == 63  # the longest a key may be
    every = columns.fit(160)
    assert columns.error_width(160, every) >= columns.ERROR_MIN


async def test_the_sort_column_is_marked_in_its_header(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        labels = {k: str(c.label) for k, c in app.table.columns.items()}
        assert labels["age"] == "age ↓"  # oldest first
        assert labels["idem"] == "key"
        await press(pilot, "K")
        labels = {k: str(c.label) for k, c in app.table.columns.items()}
        assert labels["idem"] == "key ↑" and labels["age"] == "age in state"


async def test_a_submitted_prompt_is_named_and_shown(seeded: Seeded) -> None:
    app = seeded.app()
    idem = idempotency_key(JobSpec(input="Summarise the pump vendors", model="gemini-flash-latest"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "7")  # the failed tab: the new row is not on it
        await press(pilot, "s")
        app.screen.query_one(TextArea).text = "Summarise the pump vendors"
        await press(pilot, "ctrl+s")
        assert await until(pilot, notified(pilot, f"submitted {idem}"))
        await settle(pilot)
        assert app.table.current_idem() == idem


async def test_view_without_views_names_the_table_and_the_file(
    seeded: Seeded, config_home: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "view")
        path = config_home / "reclaim-tui" / "settings.toml"
        said = app.main.query_one("#command-message")
        assert await until(pilot, lambda: f"add a [views] table to {path}" in str(said.render()))


def test_a_long_filter_is_cut_before_the_count_goes() -> None:
    state = LoopBarState(mode="running", sort="age in state ↓", window="rows 1–37 of 37")
    state.filter = "x" * 2000
    shown = fit(bar_parts(state), 160)
    assert isinstance(shown, Content)
    assert "rows 1–37 of 37" in shown.plain and "filter: xxx" in shown.plain
    assert shown.cell_length <= 160


async def test_narrowed_after_wide_the_key_column_narrows_too(seeded: Seeded) -> None:
    """From 160 columns (whole keys) to 80: the key column kept its width
    and the table scrolled sideways, the error column off-screen."""
    app = seeded.app()
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        table = app.table
        assert str(table.get_row_at(0)[1]) == table.rows_shown[0].idem  # whole
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        app.main.feed.watch(force=True)  # the next look at the ledger redraws
        await settle(pilot)
        assert str(table.get_row_at(0)[1]).endswith("…")
        assert table.virtual_size.width <= table.scrollable_content_region.width
