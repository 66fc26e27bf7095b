"""Where the console writes files (issue 15, items 8 and 9): into an existing
directory of the operator's (the ledger's), never the process's current
directory by accident, and it says the full path."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from reclaim_tui.tui.screens.export import ExportScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A current directory and a home (without a Downloads folder) that are
    not the ledger's."""
    cwd, home = tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return cwd


async def test_ctrl_e_writes_beside_the_ledger_and_says_the_full_path(
    seeded: Seeded, elsewhere: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+e")
        assert isinstance(app.screen, ExportScreen)
        field = app.screen.query_one("#export-path", Input)
        target = Path(field.value)
        assert target.is_absolute() and target.parent == seeded.db.parent.resolve(), field.value
        await press(pilot, "enter")
        assert await until(pilot, notified(pilot, f"exported 8 rows to {target}"))
    assert target.exists()
    assert list(elsewhere.iterdir()) == []


async def test_a_relative_export_path_is_under_the_ledgers_directory(
    seeded: Seeded, elsewhere: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "ctrl+e")
        app.screen.query_one("#export-path", Input).value = "rows.jsonl"
        await press(pilot, "enter")
        target = seeded.db.parent.resolve() / "rows.jsonl"
        assert await until(pilot, notified(pilot, f"exported 8 rows to {target}"))
    assert target.exists()


async def test_the_palettes_screenshot_is_saved_beside_the_ledger(
    seeded: Seeded, elsewhere: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        command = next(c for c in app.get_system_commands(app.screen) if c.title == "Screenshot")
        command.callback()
        assert await until(pilot, notified(pilot, "Saved screenshot to"))
        assert not [n for n in app._notifications if "Failed" in n.message]
    shots = list(seeded.db.parent.glob("*.svg"))
    assert len(shots) == 1, shots
    assert any(str(shots[0].resolve()) in n.message for n in app._notifications)
