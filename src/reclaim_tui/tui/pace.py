"""The reclaim loop's pace: paused or running, seconds between passes, and what
the loop is doing now (no I/O)."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["INTERVALS", "LoopPace"]

#: The choices `+` / `-` step through (seconds between reclaim passes).
INTERVALS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class LoopPace:
    """Owned by the app, which runs the loop and binds P, + and -. The main
    screen shows it in the loop bar and kicks it when jobs are submitted.

    `mode` is the loop bar's word for it: starting, running, paused, ticking
    or read-only.
    """

    def __init__(self, interval: float, paused: bool, mode: str) -> None:
        self.interval = interval
        self.paused = paused
        self.mode = mode
        self._kick = asyncio.Event()
        self._passed = False

    def idle(self) -> None:
        """Between passes: the mode says whether another one will come."""
        self.mode = "paused" if self.paused else "running"

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.idle()
        return self.paused

    def step_interval(self, longer: bool) -> float:
        if longer:
            bigger = [i for i in INTERVALS if i > self.interval]
            self.interval = bigger[0] if bigger else INTERVALS[-1]
        else:
            smaller = [i for i in INTERVALS if i < self.interval]
            self.interval = smaller[-1] if smaller else INTERVALS[0]
        return self.interval

    def kick(self) -> None:
        """Wake the loop now: new jobs, or a new pace, should not wait out the old interval."""
        self._kick.set()

    def ticking(self) -> None:
        """A pass begins."""
        self.mode = "ticking"
        self._passed = True

    async def wait(self) -> None:
        """Until the next pass is due or a kick, whichever comes first. A kick
        that came during the pass just made is forgotten: that pass saw it. One
        that came while the loop was paused is not (P pressed while the paused
        loop told the process registry it is alive: forgotten, the resumed pass
        waited out the whole interval)."""
        if self._passed:
            self._kick.clear()
            self._passed = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._kick.wait(), self.interval)
        self._kick.clear()  # taken: the next wait waits again
