"""The console's bar shows the API's health (issue 10): a pass stopped by the
circuit breaker says why, in the bar and the loop log; the rows stay as they
were, not failed."""

from __future__ import annotations

from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.errors import NotCreatedError
from reclaim_tui.tui.widgets.loop_bar import LoopBar

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle, until


def _bar_text(app: object) -> str:
    return str(app.main.query_one(LoopBar).render())  # type: ignore[attr-defined]


async def test_the_bar_says_when_the_api_refuses_us(seeded: Seeded) -> None:
    refused = NotCreatedError(
        "create answered HTTP 400: API key not valid", 400, retryable=True, cause="auth"
    )
    seeded.fake.create_faults = [refused for _ in range(50)]
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:  # enough due rows for the breaker to open within one pass
        more = [JobSpec(input=f"more {i}", model="m") for i in range(6)]
        await ledger.insert_jobs(
            [(f"more-{i}", j.to_json(), j.model) for i, j in enumerate(more)], Actor.CLI
        )
    finally:
        await ledger.close()
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "API" not in _bar_text(app)  # nothing known before a pass
        await press(pilot, "P")  # run the loop: one pass
        assert await until(pilot, lambda: "API unavailable (auth)" in _bar_text(app))
    rows = await seeded.snapshot()
    waiting = [r for r in rows.values() if r.status == Status.RESERVING]
    assert len(waiting) == 7 and all(r.attempts == 0 for r in waiting)


async def test_the_bar_says_when_some_calls_were_refused(seeded: Seeded) -> None:
    seeded.fake.create_faults = [
        NotCreatedError("429", 429, retryable=True, cause="rate_limit", retry_after=30.0)
    ]
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "P")
        assert await until(pilot, lambda: "API degraded (1 deferred)" in _bar_text(app))
