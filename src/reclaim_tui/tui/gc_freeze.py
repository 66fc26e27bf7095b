"""The console's start-up objects, kept out of the garbage collector's sight.

CPython's full collections scan every tracked object; with the console's
churn of segments and strips one ran every few seconds and held the UI
thread long enough to feel (`console_load.py` with a gc callback), which a key
pressed then waited out. Frozen objects are still freed by reference
counting; only cycles among them outlive their use, and the objects alive at
start-up (the imports, the widget tree) are the console's
for its whole run. Undone at unmount (tests run many consoles in one process)."""

from __future__ import annotations

import gc
from collections.abc import Callable

__all__ = ["StartupFreeze"]


class StartupFreeze:
    def __init__(self, enabled: Callable[[], bool] = lambda: True) -> None:
        #: Asked at each step (the console's `freeze_gc`, which a test may turn off).
        self.enabled = enabled
        self.frozen = False
        self._complete = False

    def early(self) -> None:
        """The imports, out of sight before the first paint: a full collection
        during it scanned them all, a large part of the first paint in
        console_load.py's runs (where the
        collector's counters stand decides whether one comes then). No
        collection first: the screen is what waits."""
        if not self.enabled():
            return
        gc.freeze()
        self.frozen = True

    def freeze(self) -> None:
        """Move everything alive now out of the collector's sight (once)."""
        if self.enabled() and not self._complete:
            gc.collect()  # what is garbage now is not frozen with the rest
            gc.freeze()
            self.frozen = self._complete = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = self._complete = False
