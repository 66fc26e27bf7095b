"""The console sends nothing the operator did not ask for (issue 32): with
the loop paused, a prompt submitted with `s` goes out alone."""

from __future__ import annotations

from textual.widgets import TextArea

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import Status
from reclaim_tui.tui.screens.submit import SubmitScreen

from .conftest import Seeded, spec
from .pilot_helpers import SIZE, notified, press, settle, until


async def test_a_submit_while_paused_sends_the_prompt_and_nothing_else(seeded: Seeded) -> None:
    waiting = await seeded.get("reserving")
    assert (waiting.status, waiting.attempts) == (Status.RESERVING, 0)
    app = seeded.app()  # paused
    assert app.pace.paused
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, SubmitScreen)
        app.screen.query_one(TextArea).text = "Summarise the paused-loop rule"
        await press(pilot, "ctrl+s")
        assert await until(pilot, notified(pilot, "submitted: 1 reserved"))
        await settle(pilot)
    mine = await seeded.get(idempotency_key(spec("Summarise the paused-loop rule")))
    assert mine.status == Status.SUBMITTED and mine.handle
    after = await seeded.get("reserving")
    # The row reserved before stays unsent: the paused loop sends it later.
    assert (after.status, after.attempts, after.handle) == (Status.RESERVING, 0, None)
