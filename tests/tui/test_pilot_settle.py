"""`settle` (pilot_helpers.py) waits for every pump of the screen, the
widgets' scrollbars too: Textual starts a scrollbar as a pump of its own,
outside the DOM's walk, and a test that counted what the screen did after
`settle` saw the layout a new scrollbar asked for when the machine was
loaded enough to delay that pump's first messages."""

from __future__ import annotations

from textual.message import Message

from reclaim_tui.tui.widgets.loop_log import LoopLog

from .conftest import Seeded
from .pilot_helpers import SIZE, _queued, settle


class _Nudge(Message):
    """A message no one handles."""


async def test_a_message_waiting_in_a_scrollbars_queue_is_not_quiet(seeded: Seeded) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        log = app.query_one(LoopLog)
        for n in range(log.container_size.height + 1):
            log.line(seeded.clock.now(), f"line {n}")
        await settle(pilot)
        await pilot.pause()
        bar = log.vertical_scrollbar
        await settle(pilot)
        assert not _queued(app)
        bar.post_message(_Nudge())
        assert _queued(app)  # nothing else waits: only the scrollbar's queue
        await settle(pilot)
        assert bar._message_queue.empty()
