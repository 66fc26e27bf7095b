"""Watching the ledger for changes made by anyone: this console's engine,
a cron tick, another console. Mixed into the app; no I/O but the reader's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from reclaim_tui.tui.messages import CompletionsRecorded, CountsChanged

if TYPE_CHECKING:
    from reclaim_tui.tui.app import ReclaimApp

__all__ = ["LedgerWatch"]


class LedgerWatch:
    """Mixin for ReclaimApp: `watch_ledger` every second and after every change."""

    def init_watch(self: ReclaimApp) -> None:
        self._seen_update = 0.0
        self._seen_event: int | None = None
        self._counted_at = float("-inf")
        self._watching = self._watch_wanted = self._watch_force = False

    def watch_ledger(self: ReclaimApp, force: bool = False) -> None:
        """Look at the ledger again, now or right after the look in progress.

        Requests coalesce instead of cancelling each other: a look over a big
        ledger can outlast the 1 s timer, and a forced one (after a pass or
        an action) must not be swallowed by the timer's next plain one.
        """
        self._watch_force = self._watch_force or force
        self._watch_wanted = True
        if not self._watching:
            self._watching = True
            self._watch_loop()

    @work(group="watch")
    async def _watch_loop(self: ReclaimApp) -> None:
        try:
            while self._watch_wanted:
                self._watch_wanted = False
                force, self._watch_force = self._watch_force, False
                try:
                    await self._watch_once(force)
                except BaseException:
                    self._watch_force = self._watch_force or force
                    raise
        finally:
            self._watching = False

    async def _watch_once(self: ReclaimApp, force: bool) -> None:
        reader = self.reader
        if reader is None:
            return
        changed, latest = await reader.changed_since(self._seen_update - 5.0)
        self._seen_update = max(self._seen_update, latest)
        now = self.config.clock.now()
        if force or (changed and now - self._counted_at >= 2.0) or now - self._counted_at > 15:
            self._counted_at = now
            await reader.refresh_liveness()
            self.post_message(CountsChanged(*await reader.counts()))
        if not self._paging():
            # (A page the operator asked for is on its way: it is fresh, and a
            # refresh started now would cancel it.)
            if changed or force:
                self.load_page("from", cursor="keep")
            else:
                self.rerender()
        times, self._seen_event = await reader.completions_since(self._seen_event)
        self.post_message(CompletionsRecorded(times))

    def _paging(self: ReclaimApp) -> bool:
        return any(w.group == "page" and not w.is_finished for w in self.workers)
