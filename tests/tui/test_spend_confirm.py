"""Every key that can create an interaction asks first, with what it would
cost, unless the operator turned confirmations off (`confirm = false` in
settings.toml) — issue 25, defect 2: `r` on one row spent with no question."""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.core.models import Status
from reclaim_tui.tui.screens.confirm import ConfirmScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until


async def test_r_on_one_row_asks_with_the_cost_and_no_spends_nothing(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
        assert isinstance(app.screen, ConfirmScreen)
        question = app.screen.question
        assert seeded.keys["failed"] in question, question
        assert "Cost:" in question, question
        await press(pilot, "n")
        assert await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await settle(pilot)
    assert await seeded.snapshot() == before


async def test_confirm_false_in_the_settings_retries_one_row_at_once(
    seeded: Seeded, config_home: Path
) -> None:
    path = config_home / "reclaim-tui" / "settings.toml"
    path.parent.mkdir(parents=True)
    path.write_text("confirm = false\n")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")
        assert not isinstance(app.screen, ConfirmScreen)

        async def retried() -> bool:
            return (await seeded.get("failed")).status == Status.RESERVING

        assert await until(pilot, retried)
    assert path.read_text() == "confirm = false\n", "reading is not writing"
