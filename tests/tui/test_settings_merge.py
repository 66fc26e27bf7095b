"""A console saves only what it changed, on the settings file as it is now
(issue 32, item 9): views added to the file while a console ran were erased
by its next save, and `:interval` set in the demo changed every later
console without a word of where or for whom."""

from __future__ import annotations

import tomllib
from pathlib import Path

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until


def saved(path: Path) -> dict[str, object]:
    return tomllib.loads(path.read_text()) if path.exists() else {}


async def test_a_view_added_while_the_console_runs_survives_its_saves(
    seeded: Seeded, config_home: Path
) -> None:
    path = config_home / "reclaim-tui" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text('hidden = []\n\n[views]\nmine = "status:failed"\n')
    app = seeded.app(interval=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # Another console, or the operator's editor, adds a view and a theme.
        path.write_text(
            'theme = "nord"\nhidden = []\n\n[views]\nmine = "status:failed"\ntheirs = "model:pro"\n'
        )
        await press(pilot, "plus")
        assert await until(pilot, lambda: saved(path).get("interval") == 5.0)
        await press(pilot, "greater_than_sign")
        assert await until(pilot, lambda: saved(path).get("detail_width") == 3)
        on_disk = saved(path)
        assert on_disk["views"] == {"mine": "status:failed", "theirs": "model:pro"}
        assert on_disk["theme"] == "nord"  # not this console's: left as the file has it
        assert app.main.state.views["theirs"] == "model:pro"  # `:view theirs` works now
        # Where the pace is kept, and for whom.
        assert await until(pilot, notified(pilot, f"saved in {path}"))
        assert notified(pilot, "every console started later uses it, on any ledger")()
