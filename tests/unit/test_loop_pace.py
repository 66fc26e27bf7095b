"""The console loop's wake-ups (tui/pace.py, LoopPace.wait): a kick (P, +, -, jobs
submitted) wakes the loop's wait; one that came during a pass is forgotten (that pass
saw it); one that came while the loop was paused is not. Found by CI: P pressed while
the paused loop was telling the process registry it is alive was forgotten, and the
resumed loop waited out its whole interval (an hour in the test) before a pass.

"Returns at once" is `wait_for(…, 2)` succeeding against an interval of an hour: the
test never measures how long anything took."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from reclaim_tui.tui.pace import LoopPace

HOUR = 3600.0


class WatchedEvent(asyncio.Event):
    """An Event that says when something began to wait on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waited_on = asyncio.Event()

    async def wait(self) -> Literal[True]:
        self.waited_on.set()
        return await super().wait()


async def returns(pace: LoopPace) -> bool:
    try:
        await asyncio.wait_for(pace.wait(), 2.0)
    except TimeoutError:
        return False
    return True


async def test_a_kick_while_paused_wakes_the_next_wait() -> None:
    pace = LoopPace(HOUR, paused=True, mode="paused")
    # The loop's paused iteration (its registry call) is in flight: P resumes, kicks.
    pace.toggle_pause()
    pace.kick()
    assert await returns(pace)


async def test_a_kick_during_a_pass_is_forgotten() -> None:
    pace = LoopPace(HOUR, paused=False, mode="running")
    pace.ticking()
    pace.kick()  # new jobs while the pass runs: the pass saw them
    pace.idle()
    assert not await returns(pace)


async def test_a_kick_is_taken_once() -> None:
    pace = LoopPace(HOUR, paused=True, mode="paused")
    pace.kick()
    assert await returns(pace)
    assert not await returns(pace)  # no second wake without a second kick


@pytest.mark.parametrize("paused", [True, False])
async def test_a_kick_during_the_wait_wakes_it(paused: bool) -> None:
    pace = LoopPace(HOUR, paused=paused, mode="x")
    pace._kick = kick = WatchedEvent()
    waiting = asyncio.create_task(pace.wait())
    await asyncio.wait_for(kick.waited_on.wait(), 5.0)  # the wait has begun
    pace.kick()
    await asyncio.wait_for(waiting, 5.0)
