"""Keys act in the order they were typed, on what the screen shows when they act.

Two things let a fast key act on something the operator never saw:

- A jump (`g`, `G`, home, end, a page key at the window's edge, a tab) asks
  for a new window and the cursor lands when it is read. An action key that
  came with the jump ran at once, on the row the cursor was leaving (`g x`
  deleted the row the cursor had been on). So while the cursor is on its way,
  an action that reads the highlighted row waits for it to land, and every key
  after a waiting one waits behind it: they run in the order typed.
- A key typed before a question was on the screen answered it (`x y`: the `y`
  read in the same burst confirmed a delete no one had read). A key made
  before the dialog asking a question became the screen does not act on it.

`KeyOrder` does both; the app asks it about each action and each key.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.dom import DOMNode
from textual.screen import Screen

from reclaim_tui.tui.event_clock import event_time

__all__ = ["FREE_ACTIONS", "KeyOrder"]

#: Actions that do not read the highlighted row: they run at once even while
#: the cursor is on its way (the table counts its own moves meanwhile,
#: widgets/table_window.py; a new tab or filter replaces the window asked for).
FREE_ACTIONS = frozenset(
    {
        "first_page",
        "last_page",
        "show_tab",
        "sort_by",
        "cycle_sort",
        "filter",
        "command_line",
        "clear",
        "refresh",
        "toggle_panel",
        "detail_width",
        "help",
        "costs",
        "charts",
        "submit",
        "export",
        "noop",
        "cursor_down",
        "cursor_up",
        "page_down",
        "page_up",
        "scroll_top",
        "scroll_bottom",
        "scroll_home",
        "scroll_end",
    }
)


class KeyOrder:
    """The actions waiting for the cursor, and when each question was shown."""

    def __init__(
        self,
        moving: Callable[[], bool],
        landed: Callable[[], Awaitable[None]],
        questions: tuple[type[Screen[Any]], ...],
    ) -> None:
        #: True while a window asked for by a key is not shown yet; `landed`
        #: returns once it is (or at once when nothing is on its way).
        self._moving, self._landed = moving, landed
        self._questions = questions
        self._waiting: deque[Callable[[], Awaitable[object]]] = deque()
        self._shown_at: weakref.WeakKeyDictionary[DOMNode, float] = weakref.WeakKeyDictionary()

    # -- actions after a jump -----------------------------------------------------------
    def must_wait(self, action: str) -> bool:
        """The action must run after the keys waiting, or after the cursor landed."""
        return bool(self._waiting) or (action not in FREE_ACTIONS and self._moving())

    def wait(self, run: Callable[[], Awaitable[object]]) -> bool:
        """Queue `run`; True when the caller must start `drain` (nothing was queued)."""
        self._waiting.append(run)
        return len(self._waiting) == 1

    async def drain(self) -> None:
        """Run the waiting actions in order, each once the cursor has landed."""
        while self._waiting:
            await self._landed()
            await self._waiting[0]()
            self._waiting.popleft()

    def forget(self) -> None:
        """Drop what waits (the ledger it was typed for is gone)."""
        self._waiting.clear()

    # -- questions -------------------------------------------------------------------------
    def shown(self, screen: Screen[Any]) -> None:
        """`screen` is now the one keys act on."""
        if isinstance(screen, self._questions):
            self._shown_at[screen] = event_time()

    def stale(self, key: events.Key, screen: DOMNode) -> bool:
        """The key was made before `screen`, a question, was shown: it was
        typed blind and must not answer it."""
        shown_at = self._shown_at.get(screen)
        return shown_at is not None and key.time < shown_at
