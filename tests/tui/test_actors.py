"""Who wrote each event (issue 15, item 6): the console's automatic passes and
its operator's actions must be told apart in a row's history."""

from __future__ import annotations

from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.core.models import Event, Row, Status
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.widgets.detail_pane import render_detail

from .conftest import Seeded
from .pilot_helpers import SIZE, press, select, settle, until


def _cancelled_row() -> Row:
    return Row(
        idem="k1",
        spec='{"input": "x"}',
        model="m",
        status=Status.CANCELLED,
        handle=None,
        attempts=1,
        polls=0,
        inflight=False,
        held=False,
        duplicates=0,
        error_streak=0,
        prev_owner=None,
        lease_owner=None,
        lease_until=0.0,
        next_at=0.0,
        last_error=None,
        created_at=0.0,
        state_since=0.0,
        submitted_at=None,
        done_at=None,
        consumed_at=None,
        updated_at=0.0,
    )


def test_the_timeline_keeps_its_columns_for_long_actor_names() -> None:
    row = _cancelled_row()
    events = [
        Event(1, 0.0, row.idem, "tick", None, "reserving", "reserved"),
        Event(2, 1.0, row.idem, "console-loop", "reserving", "submitted", "created"),
        Event(3, 2.0, row.idem, "console", "submitted", "cancelled", "operator cancel"),
    ]
    text = render_detail(Detail(row, None, events, None), 3.0).plain
    lines = text.split("timeline (3 events)\n", 1)[1].splitlines()
    # The transitions start in one column, whatever the actor's name.
    starts = {line.index(e.from_status or "∅", 22) for line, e in zip(lines, events, strict=True)}
    assert len(starts) == 1, lines


async def test_a_pass_of_the_loop_is_not_recorded_as_the_operator(seeded: Seeded) -> None:
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "P")  # the loop's pass sends the reserved row

        def status_is(role: str, status: Status):  # type: ignore[no-untyped-def]
            async def check() -> bool:
                return (await seeded.get(role)).status == status

            return check

        assert await until(pilot, status_is("reserving", Status.SUBMITTED))
        await press(pilot, "P")
        await select(pilot, seeded.keys["failed"])
        await press(pilot, "r")  # the operator's action: it asks first
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await press(pilot, "y")
        assert await until(pilot, status_is("failed", Status.RESERVING))
    loop = {e.actor for e in await seeded.events("reserving") if e.to_status == "submitted"}
    operator = (await seeded.events("failed"))[-1].actor
    assert operator == "console"
    assert loop and operator not in loop, loop


def test_the_help_names_both_console_actors() -> None:
    from reclaim_tui.tui.screens.help import help_text

    text = help_text(readonly=False).plain
    assert "actor 'console'" in text and "'console-loop'" in text
