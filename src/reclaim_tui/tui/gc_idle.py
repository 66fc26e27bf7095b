"""The garbage collector's full collections, run while no key is pressed.

With the start-up objects frozen (gc_freeze.py) a full collection still
scans every object made since: the strips, segments and texts the screen
keeps. CPython starts one whenever enough survivors have piled up, whatever
the console is doing, so now and then a key waited for it. Here the
automatic full collections are turned off while the console runs, and a
timer runs one once it is due and no key came for a moment (or when it has
been due for long: a key held down for minutes does not grow the heap
unchecked). The younger generations are collected as before. Turned back
at unmount (tests run many consoles in one process)."""

from __future__ import annotations

import gc
from collections.abc import Callable

__all__ = ["IdleCollector"]

#: Seconds without a key before a due full collection runs.
QUIET = 0.5
#: Seconds a due full collection waits for a quiet moment at most.
LONGEST = 30.0
#: A gen2 threshold CPython never reaches: no automatic full collection.
NEVER = 1 << 30


class IdleCollector:
    """CPython's full collections, run by `tick` when the keys are quiet."""

    def __init__(self, now: Callable[[], float], enabled: Callable[[], bool]) -> None:
        #: The clock the keys and the ticks are timed by (the console's).
        self._now = now
        #: Asked at start (the console's `freeze_gc`, which a test may turn off).
        self.enabled = enabled
        self._thresholds: tuple[int, int, int] | None = None
        self._last_key = float("-inf")
        self._due_since: float | None = None
        self._ticking = False
        #: Full collections run here so far.
        self.collections = 0

    @property
    def running(self) -> bool:
        return self._thresholds is not None

    def start(self, every: Callable[[float, Callable[[], bool]], object]) -> bool:
        """Turn CPython's automatic full collections off and have `every`
        (`App.set_interval`) call `tick` each second; once. True when this did."""
        if self._thresholds is not None or not self.enabled():
            return False
        self._thresholds = gc.get_threshold()
        young, middle, _ = self._thresholds
        gc.set_threshold(young, middle, NEVER)
        if not self._ticking:
            self._ticking = True
            every(1.0, self.tick)
        return True

    def key(self) -> None:
        """A key came: a due collection waits for the next quiet moment."""
        self._last_key = self._now()

    def tick(self) -> bool:
        """Run a full collection if one is due and the keys are quiet (or it
        has waited `LONGEST`); True when it ran. Called by a timer."""
        if self._thresholds is None:
            return False
        # CPython's own rule: a full collection after this many of the middle one.
        if gc.get_count()[2] < self._thresholds[2]:
            return False
        now = self._now()
        if self._due_since is None:
            self._due_since = now
        if now - self._last_key < QUIET and now - self._due_since < LONGEST:
            return False
        gc.collect(2)
        self._due_since = None
        self.collections += 1
        return True

    def stop(self) -> None:
        """CPython's thresholds back as they were."""
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
