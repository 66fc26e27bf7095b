"""Pilot tests of one job: followed live (f), its raw JSON (v), its result in
$PAGER / $EDITOR (p, e), its key or interaction id copied (y, Y), j / k."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.screens.follow import FollowScreen
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.screens.raw_json import RawJsonScreen
from reclaim_tui.tui.widgets.follow_view import FollowView

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, until


def follow_text(app: ReclaimApp) -> str:
    view = app.screen.query_one(FollowView)
    state = view.query_one("#follow-state")
    parts = [state.border_title, state.render(), view.timeline.border_title]
    for event in view.query(".event"):
        parts.append(" ".join(str(s.render()) for s in event.query(Static)))
    return "\n".join(map(str, parts))


async def cancel_elsewhere(seeded: Seeded, role: str) -> None:
    """A cron tick in another process cancels the row."""
    seeded.clock.advance(5)
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    other = Engine(ledger, seeded.fake, DirectorySink(seeded.out), owner="cron|2|x")
    await other.operator.cancel(seeded.keys[role], actor=Actor.CLI)
    await ledger.close()


async def following(pilot: Pilot[None], seeded: Seeded, role: str) -> FollowView:
    await select(pilot, seeded.keys[role])
    await press(pilot, "f")
    app = pilot.app
    assert isinstance(app.screen, FollowScreen)
    view = app.screen.query_one(FollowView)
    assert await until(pilot, lambda: view.detail is not None)
    return view


async def test_f_follows_the_row_live_after_it_left_the_tab(seeded: Seeded) -> None:
    app = seeded.app()
    key = seeded.keys["submitted"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "4")  # the submitted tab
        view = await following(pilot, seeded, "submitted")
        text = follow_text(app)
        assert f"following {key}" in text
        for field in ("submitted for", "attempts", "lease holder", "created", "consumed"):
            assert field in text, field
        footer = {k.description for k in app.screen.query(FooterKey)}
        assert {"Back", "Raw", "Pager", "Copy key", "Help"} <= footer, footer
        before = len(seeded_events := await seeded.events("submitted"))
        assert f"timeline · {before} events" in text
        assert seeded_events[-1].note in text

        await cancel_elsewhere(seeded, "submitted")
        # No key pressed: the console's watch finds the change and the view follows.
        assert await until(pilot, lambda: "cancelled for" in follow_text(app))
        after = await seeded.events("submitted")
        assert len(after) > before
        assert await until(pilot, lambda: f"timeline · {len(after)} events" in follow_text(app))
        assert after[-1].note in follow_text(app)
        assert "new since you followed it" in str(view.timeline.border_subtitle)
        # The job left the submitted tab; the table moved on, the view did not.
        assert app.table.current_idem() != key
        assert view.idem == key

        await press(pilot, "escape")
        assert app.screen is app.main
        assert app.focused is app.table
        row = app.table.cursor_row
        await press(pilot, "j")
        assert app.table.cursor_row in (row, row + 1)  # a key for the table, not lost


async def test_j_and_k_move_the_table_cursor(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, app.table.rows_shown[0].idem)
        row = app.table.cursor_row
        await press(pilot, "j", "j")
        assert app.table.cursor_row == row + 2
        await press(pilot, "k")
        assert app.table.cursor_row == row + 1


async def test_question_mark_in_the_follow_view_lists_its_keys_first(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await following(pilot, seeded, "consumed")
        await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = str(app.screen.query_one("Static").render())
        assert text.startswith("Keys here: following one job")
        assert text.index("Back / close") < text.index("Keys of the other views")
        assert text.index("Keys of the other views") < text.index("Filter: text")
        await press(pilot, "escape")
        assert isinstance(app.screen, FollowScreen)
        await press(pilot, "escape")
        await press(pilot, "question_mark")
        main_help = str(app.screen.query_one("Static").render())
        assert main_help.startswith("Keys here: the ledger table")
        assert "Filter: text" in main_help  # every key works on the table


async def test_v_shows_the_stored_interaction_as_json(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        row = app.table.current_row()
        assert row is not None and row.handle
        await press(pilot, "v")
        assert await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        body = str(app.screen.query_one("#raw-body").render())
        assert json.loads(body)["id"] == row.handle
        assert '\n  "id"' in body  # indented
        await press(pilot, "escape")
        assert app.screen is app.main
        await select(pilot, seeded.keys["reserving"])
        await press(pilot, "v")
        assert await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        assert "no stored result" in str(app.screen.query_one("#raw-body").render())


def recorder(tmp_path: Path, status: int = 0) -> tuple[str, Path]:
    """A pager that records its argument and what the file held, then exits `status`."""
    log = tmp_path / "pager.log"
    script = tmp_path / "pager.sh"
    script.write_text(
        f'#!/bin/sh\necho "$1" >> "{log}"\ncat "$1" > "{log}.content"\nexit {status}\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script), log


@pytest.mark.parametrize(("key", "variable"), [("p", "PAGER"), ("e", "EDITOR")])
async def test_p_and_e_open_the_result_in_pager_or_editor(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str, variable: str
) -> None:
    script, log = recorder(tmp_path)
    monkeypatch.setenv(variable, script)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, key)
        assert await until(pilot, log.exists)
        await settle(pilot)
        opened = Path(log.read_text().strip())
        assert opened.name.endswith(f"{seeded.keys['consumed']}.md")
        content = Path(f"{log}.content").read_text()
        assert content == fake_output_text("Summarise the Q3 billing migration")
        assert not opened.exists(), "the temporary file is removed after"
        assert app.is_running


async def test_the_raw_view_pages_its_json(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, log = recorder(tmp_path)
    monkeypatch.setenv("PAGER", script)
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "v")
        assert await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        await press(pilot, "p")
        assert await until(pilot, log.exists)
        assert Path(log.read_text().strip()).name.endswith(".json")
        assert json.loads(Path(f"{log}.content").read_text())["status"] == "completed"


async def test_a_missing_or_failing_pager_is_a_notification(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAGER", str(tmp_path / "no-such-pager"))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "p")
        assert await until(pilot, notified(pilot, "could not run: not found"))
        script, _ = recorder(tmp_path, status=3)
        monkeypatch.setenv("PAGER", script)
        await press(pilot, "p")
        assert await until(pilot, notified(pilot, "exited with status 3"))
        await select(pilot, seeded.keys["reserving"])
        await press(pilot, "p")
        assert await until(pilot, notified(pilot, "no stored result"))
        assert app.is_running
        leftovers = [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("reclaim-*-*.md")]
        assert not [p for p in leftovers if seeded.keys["consumed"] in p.name]


async def test_y_and_shift_y_copy_the_key_and_the_interaction_id(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        row = app.table.current_row()
        assert row is not None and row.handle
        await press(pilot, "y")
        assert app.clipboard == row.idem
        assert await until(pilot, notified(pilot, f"copied the key {row.idem}"))
        await press(pilot, "Y")
        assert app.clipboard == row.handle
        assert await until(pilot, notified(pilot, f"copied the interaction id {row.handle}"))
        await select(pilot, seeded.keys["reserving"])
        await press(pilot, "Y")
        assert app.clipboard == row.handle  # unchanged: there is no id to copy
        assert await until(pilot, notified(pilot, "has no interaction id yet"))


async def test_the_follow_view_copies_and_shows_raw_json_too(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = await following(pilot, seeded, "done")
        assert view.detail is not None
        await press(pilot, "Y")
        assert app.clipboard == view.detail.row.handle
        await press(pilot, "v")
        assert await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        await press(pilot, "escape")
        assert isinstance(app.screen, FollowScreen)


async def test_a_change_while_help_covers_the_follow_view_is_shown_after(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = await following(pilot, seeded, "submitted")
        await press(pilot, "question_mark")
        shows = view.shows
        await cancel_elsewhere(seeded, "submitted")
        assert await until(pilot, lambda: view.shows > shows)  # read under the help
        await press(pilot, "escape")
        assert isinstance(app.screen, FollowScreen)
        assert await until(pilot, lambda: "cancelled for" in follow_text(app))


async def test_j_and_k_scroll_the_raw_json(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=(80, 12)) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "v")
        assert await until(pilot, lambda: isinstance(app.screen, RawJsonScreen))
        scroll = app.screen.query_one("#raw-scroll")
        assert scroll.max_scroll_y > 2
        await press(pilot, "j", "j")
        assert scroll.scroll_y == 2
        await press(pilot, "k")
        assert scroll.scroll_y == 1


async def test_a_read_only_console_follows_pages_and_copies(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, log = recorder(tmp_path)
    monkeypatch.setenv("PAGER", script)
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = await following(pilot, seeded, "consumed")
        assert view.detail is not None
        await press(pilot, "y")
        assert app.clipboard == seeded.keys["consumed"]
        await press(pilot, "p")
        assert await until(pilot, log.exists)


async def test_a_follow_view_torn_down_is_not_redrawn(seeded: Seeded) -> None:
    """The main screen redraws each follow view in the stack on every refresh;
    one whose screen is being dismissed has lost its children, and a redraw
    then failed the console's worker (NoMatches, seen under load)."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        view = await following(pilot, seeded, "submitted")
        await view.remove_children()
        view.redraw(seeded.clock.now())  # nothing to draw on: no error
