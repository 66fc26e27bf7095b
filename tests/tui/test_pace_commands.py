"""`:interval SECONDS` and `:concurrency N` (issue 25, D5). A console not
attached to a service keeps its own loop: `:interval` sets it, checked;
`:concurrency` is an attached console's (the service's calls in flight)."""

from __future__ import annotations

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, settle, until
from .test_command_line import command, line_open, message


async def test_interval_sets_the_local_loop_and_bad_values_are_refused(seeded: Seeded) -> None:
    app = seeded.app(paused=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, "interval 10")
        assert app.pace.interval == 10.0
        assert await until(pilot, notified(pilot, "a pass every 10s"))
        await command(pilot, "interval soon")
        assert line_open(app) and "'soon' is not a number" in message(app)
        await pilot.press("escape")
        await command(pilot, "interval 999999")
        assert await until(pilot, notified(pilot, "more than 0 and at most 86400 seconds"))
        assert app.pace.interval == 10.0
        await command(pilot, "concurrency 2.5")
        assert line_open(app) and "not a whole number" in message(app)
        await pilot.press("escape")
        await command(pilot, "concurrency 3")
        assert await until(pilot, notified(pilot, "sets an attached service's"))
