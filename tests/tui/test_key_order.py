"""Keys typed fast act on what the screen shows when they act (issue 32, items
1–3 and 11): a jump and an action are ordered, a question is not answered by
a key typed with the one that opened it, a text field takes a burst whole, and
a key pressed before the ledger is open waits for it."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual import events
from textual._time import get_time
from textual.keys import _character_to_key
from textual.widgets import TextArea

from reclaim_tui.core.ledger.console.queries import ConsoleReader
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


def _keys(text: str, first: float, apart: float = 0.0005) -> list[events.Key]:
    """The keys of `text` as the terminal made them, `apart` seconds apart from `first`."""
    keys = [events.Key(_character_to_key(ch), ch) for ch in text]
    for i, key in enumerate(keys):
        key.time = first + i * apart
    return keys


async def test_a_paste_read_in_pieces_with_idles_between_runs_no_action(
    seeded: Seeded,
) -> None:
    """2 of 13 pastes of 18-21 keys ran as actions: they reached the app in
    pieces, each short enough to pass for typing."""
    app = seeded.app()
    now = [0.0]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        start = app.table.cursor_row
        guard = app.paste_guard
        guard.now = lambda: now[0]  # the keys' clock, stopped while the pieces come
        now[0] = 100.0
        first, second = _keys("jjjjjjsx", 100.0), _keys("rca jjjjj", 100.004)
        for key in first:
            app.post_message(key)
        await pilot._wait_for_screen()  # the app idles between the two reads
        assert app.table.cursor_row == start  # held: the burst may go on
        for key in second:
            app.post_message(key)
        await pilot._wait_for_screen()
        now[0] = 101.0  # the burst is over
        await settle(pilot)
        assert app.screen is app.main  # neither submit (s) nor a question opened
        assert app.table.cursor_row == start
        assert await until(pilot, notified(pilot, "17 keys came at once"))


async def test_the_last_key_of_a_paste_read_late_does_not_act(seeded: Seeded) -> None:
    """The terminal's parser hands over a read's last key at its next tick: a
    paste's last key acted in 10 of 11 pastes."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        start = app.table.cursor_row
        # Made a while ago: the key typed at the end comes long after the paste.
        body = _keys("the quick brown fox jump", get_time() - 10)
        for key in body:
            app.post_message(key)
        await settle(pilot)
        assert await until(pilot, notified(pilot, "24 keys came at once"))
        (last,) = _keys("s", body[-1].time + 0.1)  # its tick, a tenth of a second later
        app.post_message(last)
        await settle(pilot)
        assert app.screen is app.main  # s did not open the submit dialog
        assert app.table.cursor_row == start
        await press(pilot, "j")  # a key typed later acts
        assert app.table.cursor_row == start + 1
