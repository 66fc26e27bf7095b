"""Noticing when interactions end, for webhooks.

The store computes progress when it is read (no timers), so nothing in it
says "this interaction has just completed". `EndingWatcher` keeps every
running interaction on a heap by the time its run ends by itself and calls
`on_end` when that time has come; the store calls `track` on each create,
cancel and admin finish, so an ending forced early is seen at once. An
interaction held by the admin API (no end time) waits for its next change.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

from reclaim_tui.emulator.interaction import PENDING, StoredInteraction
from reclaim_tui.emulator.state import InteractionStore

__all__ = ["EndingWatcher"]

#: The longest the watcher sleeps while a run is pending: the store's clock
#: may be injected (and jump), so it is looked at again at least this often.
_POLL_SECONDS = 0.25

#: (interaction, status it ended in, when it ended on the store's clock)
OnEnd = Callable[[StoredInteraction, str, float], None]


class EndingWatcher:
    """Calls `on_end(interaction, status, at)` once per ending of each interaction."""

    def __init__(self, store: InteractionStore, on_end: OnEnd) -> None:
        self._store = store
        self._on_end = on_end
        self._due: list[tuple[float, int, int, StoredInteraction]] = []
        #: The current version of each running interaction; older heap entries are stale.
        self._version: dict[str, int] = {}
        self._order = itertools.count()
        self._wake = asyncio.Event()

    def track(self, interaction: StoredInteraction) -> None:
        """Look at `interaction` now (created or changed): report its end or wait for it."""
        version = self._version.get(interaction.id, 0) + 1
        self._version[interaction.id] = version
        self._look(interaction, version)

    def _look(self, interaction: StoredInteraction, version: int) -> None:
        now = self._store.clock()
        status = interaction.status_at(now)
        end = interaction.end_at()
        if status not in PENDING:
            del self._version[interaction.id]
            self._on_end(interaction, status, end if end is not None and end <= now else now)
        elif end is not None and end > now:
            heapq.heappush(self._due, (end, next(self._order), version, interaction))
            self._wake.set()
        # Otherwise it is held (admin finish to a pending status): its next
        # change comes through track().

    def reset(self) -> None:
        self._due.clear()
        self._version.clear()

    async def run(self) -> None:
        """Report endings as their time comes; runs until cancelled."""
        while True:
            now = self._store.clock()
            while self._due and self._due[0][0] <= now:
                _, _, version, interaction = heapq.heappop(self._due)
                if self._version.get(interaction.id) != version:
                    continue  # changed since, and looked at again then
                if self._store.interactions.get(interaction.id) is not interaction:
                    del self._version[interaction.id]  # deleted before it ended
                    continue
                self._look(interaction, version)
            self._wake.clear()
            timeout = min(max(self._due[0][0] - now, 0.001), _POLL_SECONDS) if self._due else None
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                pass
