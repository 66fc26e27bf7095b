"""The console's start-up objects, kept out of the garbage collector's sight.

CPython's full collections scan every tracked object; with the console's
churn of segments and strips one ran every few seconds and took ~200 ms of
the UI thread (`console_load.py` with a gc callback, issue 14), which a key
pressed then waited out. Frozen objects are still freed by reference
counting; only cycles among them outlive their use, and the objects alive at
start-up (the imports, the widget tree: ~200,000 objects) are the console's
for its whole run. Undone at unmount (tests run many consoles in one process)."""

from __future__ import annotations

import gc

__all__ = ["StartupFreeze"]


class StartupFreeze:
    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        """Move everything alive now out of the collector's sight (once)."""
        if not self.frozen:
            gc.collect()  # what is garbage now is not frozen with the rest
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
