"""The console's Submit dialog applies the jobs file's checks to a typed
prompt (issue 25, defect 6): a prompt over 1 MB was reserved, then failed at
once with 413. It is refused in the dialog, and nothing is reserved."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, TextArea

from reclaim_tui.core.jobsfile import MAX_INPUT_BYTES
from reclaim_tui.tui.operations import _read_jobs
from reclaim_tui.tui.screens.submit import SubmitRequest, SubmitScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until
from .test_keys_operate import _open_the_file_pane


async def test_a_prompt_over_1_mb_is_refused_in_the_dialog_and_reserves_nothing(
    seeded: Seeded,
) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "x" * (MAX_INPUT_BYTES + 10)
        await press(pilot, "ctrl+s")
        error = app.screen.query_one("#submit-error")
        assert await until(pilot, lambda: "over 1,000,000" in str(error.render())), str(
            error.render()
        )
        assert isinstance(app.screen, SubmitScreen)
        await settle(pilot)
    assert await seeded.snapshot() == before


async def test_a_bad_model_name_is_refused_like_a_jobs_file_line(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "fine prompt"
        app.screen.query_one("#model", Input).value = "m" * 300
        await press(pilot, "ctrl+s")
        error = app.screen.query_one("#submit-error")
        assert await until(pilot, lambda: "'model'" in str(error.render())), str(error.render())
        await settle(pilot)
    assert await seeded.snapshot() == before


async def test_a_jsonl_file_is_split_on_newlines_only(seeded: Seeded, tmp_path: Path) -> None:
    """U+2028 is legal inside a JSON string: the console read the file with
    splitlines(), which cut such a line in two (the CLI's reader does not)."""
    jobs = tmp_path / "jobs.jsonl"
    jobs.write_text('{"input": "one\u2028line"}\n', encoding="utf-8")
    (job,) = await _read_jobs(SubmitRequest(path=str(jobs)), "gemini-flash-latest")
    assert job.input == "one\u2028line"


async def test_an_empty_jsonl_file_is_said_in_the_dialog(seeded: Seeded, tmp_path: Path) -> None:
    """It said "submitted: 0 reserved", as if something had been done."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open_the_file_pane(pilot)
        app.screen.query_one("#path", Input).value = str(empty)
        await press(pilot, "ctrl+s")
        error = app.screen.query_one("#submit-error")
        assert await until(pilot, lambda: "has no jobs" in str(error.render())), str(error.render())
        assert not notified(pilot, "submitted: 0 reserved")()
