"""Keys that come at once (issue 25, 8: "a 20,000-character unbracketed paste
froze the console for minutes and grew it to 4.4 GB"). The keys of a paste
are read in one go; the table must not run them as actions, and a line the
paste lands in stays bounded."""

from __future__ import annotations

import random
import string

from textual import events
from textual.keys import _character_to_key

from reclaim_tui.tui.typeahead import PASTE_RUN
from reclaim_tui.tui.widgets.filter_bar import LINE_MAX

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until


def paste(app: object, text: str) -> None:
    """Post the keys the way a terminal's one read delivers them: all queued
    before the first is handled."""
    for ch in text:
        app.post_message(events.Key(_character_to_key(ch), ch))  # type: ignore[attr-defined]


def pasted_text(n: int) -> str:
    rnd = random.Random(25)
    return "".join(rnd.choice(string.ascii_letters + string.digits + " .,-") for _ in range(n))


async def test_a_paste_on_the_table_runs_no_action_and_says_so(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.table.cursor_row
        paste(app, pasted_text(3000))
        await settle(pilot)
        assert app.screen is app.main  # no follow, charts or confirm screen opened
        assert app.table.cursor_row == before
        assert await until(pilot, notified(pilot, "ignored"))


async def test_typed_keys_and_a_held_key_still_act(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        start = app.table.cursor_row
        await press(pilot, "j", "j")  # typed: one at a time
        assert app.table.cursor_row == start + 2
        paste(app, "j" * (PASTE_RUN + 4))  # a held key's repeats, read in one go
        await settle(pilot)
        assert app.table.cursor_row > start + 2
        assert not notified(pilot, "ignored")()


async def test_a_paste_into_the_filter_is_kept_bounded(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash")
        paste(app, pasted_text(LINE_MAX + 500))
        await settle(pilot)
        assert app.screen is app.main
        assert len(app.main.query_one("#filter").value) == LINE_MAX  # type: ignore[attr-defined]
