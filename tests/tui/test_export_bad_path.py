"""A bad export path closed the dialog and lost the path (issue 25, item 8):
the dialog opens again with the path typed and why it failed."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from reclaim_tui.tui.screens.export import ExportScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until


async def test_a_bad_export_path_keeps_the_dialog_and_the_path(
    seeded: Seeded, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = str(blocker / "out.jsonl")  # under a file: "Not a directory"
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+e")
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#export-path", Input).value = bad
        await press(pilot, "enter")

        def reopened() -> bool:
            screen = app.screen
            return isinstance(screen, ExportScreen) and bool(screen.query("#export-error"))

        assert await until(pilot, reopened)
        assert app.screen.query_one("#export-path", Input).value == bad
        said = str(app.screen.query_one("#export-error").render())
        assert "Not a directory" in said, said
