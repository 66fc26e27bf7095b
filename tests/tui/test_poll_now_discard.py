"""`n` (poll now) and `x` (discard) in the console (issue 25)."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from reclaim_tui.core.models import Status
from reclaim_tui.tui.screens.confirm import ConfirmScreen

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, select, settle, until


async def test_n_makes_the_highlighted_in_flight_row_due_now(seeded: Seeded) -> None:
    now = seeded.clock.now()
    with closing(sqlite3.connect(seeded.db)) as db, db:  # next poll in an hour
        db.execute(
            "UPDATE jobs SET next_at = ? WHERE idem = ?", (now + 3600, seeded.keys["submitted"])
        )
    before = await seeded.get("submitted")
    consumed = await seeded.get("consumed")
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "n")

        async def due() -> bool:
            return (await seeded.get("submitted")).next_at <= now

        assert await until(pilot, due)
        assert await until(pilot, notified(pilot, "due now"))
        await select(pilot, seeded.keys["consumed"])
        await press(pilot, "n")
        assert await until(pilot, notified(pilot, "poll now"))
    after = await seeded.get("submitted")
    assert after.status == Status.SUBMITTED and after.attempts == before.attempts
    assert (await seeded.events("submitted"))[-1].actor == "console"
    assert await seeded.get("consumed") == consumed  # refused: unchanged


async def test_x_asks_then_discards_the_finished_row_archived_first(seeded: Seeded) -> None:
    app = seeded.app()
    key = seeded.keys["failed"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await select(pilot, seeded.keys["submitted"])
        await press(pilot, "x")  # not finished: refused before asking
        assert not isinstance(app.screen, ConfirmScreen)
        assert await until(pilot, notified(pilot, "discard applies to"))
        await select(pilot, key)
        await press(pilot, "x")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "escape")  # declined: nothing changes
        assert await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        assert key in await seeded.snapshot()
        await press(pilot, "x")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")

        async def gone() -> bool:
            return key not in await seeded.snapshot()

        assert await until(pilot, gone)
        assert await until(pilot, lambda: key not in [r.idem for r in app.table.rows_shown])
        files = app.main.config.files_dir
    [archive] = (files / "archive").glob("pruned-*.jsonl")
    [line] = [json.loads(x) for x in archive.read_text().splitlines()]
    assert line["idem"] == key and line["status"] == "failed" and line["events"]
