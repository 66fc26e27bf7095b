"""Keys typed fast act on what the screen shows when they act (issue 32, items
1–3 and 11): a jump and an action are ordered, a question is not answered by
a key typed with the one that opened it, a text field takes a burst whole, and
a key pressed before the ledger is open waits for it."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual import events
from textual.widgets import TextArea

from reclaim_tui.core.ledger.queries import ConsoleReader
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.submit import SubmitScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, until
from .test_paste_burst import paste

#: More different keys than a typist sends in one read (typeahead.PASTE_RUN).
SENTENCE = "Compare three vendors of solar pumps, with prices"


async def test_g_then_x_acts_on_the_first_row_not_the_row_left(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        assert app.table.cursor_row == 2
        paste(app, "gxy")  # one read: the jump, a delete, its answer
        await settle(pilot)
        assert app.table.current_idem() == seeded.keys["submitted"]
        # x acted on the row g landed on: a submitted row, which x refuses.
        assert await until(pilot, notified(pilot, "discard applies to"))
        assert not isinstance(app.screen, ConfirmScreen)
    assert seeded.keys["failed"] in await seeded.snapshot()


async def test_home_then_c_asks_about_the_row_landed_on(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        app.post_message(events.Key("home", None))
        app.post_message(events.Key("c", "c"))
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert seeded.keys["submitted"] in app.screen.question
        assert seeded.keys["failed"] not in app.screen.question


async def test_a_question_is_not_answered_by_a_key_of_the_burst_that_opened_it(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    key = seeded.keys["failed"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, key)
        paste(app, "xy")  # a laggy link: the delete and a `y` in one read
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)  # still asking
        assert key in await seeded.snapshot()
        await press(pilot, "y")  # typed after the question was shown: it answers

        async def gone() -> bool:
            return key not in await seeded.snapshot()

        assert await until(pilot, gone)


async def test_a_burst_into_the_submit_prompt_is_kept_and_sent_whole(seeded: Seeded) -> None:
    before = set(await seeded.snapshot())
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        area = app.screen.query_one(TextArea)
        assert app.focused is area
        paste(app, SENTENCE)  # typeahead, a laggy SSH link, an unbracketed paste
        await settle(pilot)
        assert area.text == SENTENCE
        await press(pilot, "ctrl+s")
        assert await until(pilot, lambda: not isinstance(app.screen, SubmitScreen))
        await settle(pilot)
    new = [row for idem, row in (await seeded.snapshot()).items() if idem not in before]
    assert [json.loads(row.spec)["input"] for row in new] == [SENTENCE]


async def test_a_key_pressed_before_the_ledger_is_open_waits_for_it(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It crashed the console: "no read before the app opened the ledger"."""
    gate = asyncio.Event()
    real_open = ConsoleReader.open

    async def slow_open(*args: object, **kwargs: object) -> ConsoleReader:
        await gate.wait()  # a large ledger, a slow disk
        return await real_open(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ConsoleReader, "open", slow_open)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot._wait_for_screen()
        assert app.reader is None
        paste(app, "7")  # the failed tab, typed at once
        await pilot._wait_for_screen()
        gate.set()
        await settle(pilot)
        assert app.is_running
        assert app.state.tab == "failed"
        assert [r.idem for r in app.table.rows_shown] == [seeded.keys["failed"]]
