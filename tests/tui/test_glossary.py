"""Words a newcomer meets, explained where they appear (issue 25): the help
screen's glossary, and `?` on the detail pane with the row's words first."""

from __future__ import annotations

from reclaim_tui.tui.glossary import GLOSSARY, GlossaryScreen, words_in
from reclaim_tui.tui.screens.help import HelpScreen, help_text

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until

NEWCOMER = ("reserving", "orphan", "held", "handle", "next poll", "cancel pending", "plan ready")


def test_help_explains_every_newcomer_word() -> None:
    text = help_text(readonly=False).plain
    for word in NEWCOMER:
        assert f"  {word} — " in text, word
    assert {w for w, _ in GLOSSARY} >= set(NEWCOMER)


def test_words_in_finds_the_words_a_text_holds() -> None:
    assert words_in("status reserving · next poll held · lease owner") == [
        "reserving",
        "lease",
        "held",
        "next poll",
    ]


async def test_question_mark_on_the_detail_explains_the_rows_words(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "question_mark")  # on the table: the help, glossary included
        assert isinstance(app.screen, HelpScreen)
        await press(pilot, "escape")
        await select(pilot, seeded.keys["orphan"])
        pane = app.main.query_one("#detail")
        assert await until(pilot, lambda: pane.shown_idem == seeded.keys["orphan"])
        assert "?" in str(pane.border_subtitle)
        await press(pilot, "enter")  # the detail, full screen, has the keys
        await press(pilot, "question_mark")
        assert await until(pilot, lambda: isinstance(app.screen, GlossaryScreen))
        screen = app.screen
        assert isinstance(screen, GlossaryScreen)
        assert {"reserving", "orphan", "handle"} <= set(screen.first)
        await press(pilot, "escape")
        assert await until(pilot, lambda: not isinstance(app.screen, GlossaryScreen))
