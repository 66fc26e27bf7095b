"""Small steps every console test takes: wait for the console to be quiet, pick a row,
wait for an effect.

Nothing here waits on time. `settle` waits until no worker (but the loop) runs,
no key waits for its burst to end, every message queue of the screen is
drained and no layout or after-refresh callback is pending, twice in a row:
a message may start a worker, a worker may post a message. `until` waits for
the effect a test asserts — a widget's state or a ledger row — with a generous limit
that only matters when the effect never comes (a CI box under load is slow,
not wrong).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

from textual.message_pump import MessagePump
from textual.pilot import Pilot
from textual.worker import WorkerState

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.widgets.detail_pane import DetailPane

SIZE = (140, 40)
#: How long an effect may take before a test gives up on it. Only a missing effect
#: waits this long; 30 s was reached by a console that was merely slow (its first
#: settle, on a 2-core machine at a load of 12 with the suite's workers beside it).
EFFECT_LIMIT = 90.0

Predicate = Callable[[], bool | Awaitable[bool]]


def _app(pilot: Pilot[None]) -> ReclaimApp:
    app = pilot.app
    assert isinstance(app, ReclaimApp)
    return app


def _busy(app: ReclaimApp) -> list[object]:
    return [
        w
        for w in app.workers
        if w.group != "loop" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
    ]


def _pumps(app: ReclaimApp) -> list[MessagePump]:
    """Every message pump of the screen: the app, the screen, its widgets and
    their scrollbars. Textual starts a widget's scrollbar as a pump of its own
    when the widget first needs one, and the DOM's walk never meets it: its
    first messages (and the layout they ask of the screen) may come after
    every widget's queue is empty."""
    pumps: list[MessagePump] = [app]
    for node in app.screen.walk_children(with_self=True):
        pumps.append(node)
        for name in ("_vertical_scrollbar", "_horizontal_scrollbar", "_scrollbar_corner"):
            bar = getattr(node, name, None)
            if bar is not None:
                pumps.append(bar)
    return pumps


def _queued(app: ReclaimApp) -> bool:
    """Any message still waiting in the queue of a pump of the screen, or a
    step Textual keeps outside the queues: a layout a widget or the screen
    still has to ask for (the flag waits for the pump's next idle, or the
    screen's update timer) and a callback waiting for the screen's next
    refresh (`call_after_refresh`). Under load the update timer fires late,
    and a settle that saw only empty queues came back before the log had
    wrapped its lines at the width its new scrollbar left."""
    pumps = _pumps(app)
    if any(not pump._message_queue.empty() for pump in pumps):
        return True
    if app._exit or app._closing or not app.is_running:
        return False  # a console on its way out lays nothing out again
    screen = app.screen
    if screen._callbacks or screen._layout_required or screen._scroll_required:
        return True
    return any(pump._next_callbacks or getattr(pump, "_layout_required", False) for pump in pumps)


async def settle(pilot: Pilot[None], limit: float = EFFECT_LIMIT) -> None:
    """Wait until the console is quiet: no worker busy, no message queued."""
    app = _app(pilot)
    deadline = time.monotonic() + limit
    quiet = 0
    while quiet < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the console never settled: {_busy(app)}")
        await app.settle()
        await pilot._wait_for_screen()
        await asyncio.sleep(0)
        quiet = 0 if _busy(app) or _queued(app) or app.keys_held else quiet + 1


async def select(pilot: Pilot[None], idem: str) -> None:
    """Put the cursor on the row with this key (it must be in the window) and
    wait until its detail is shown."""
    app = _app(pilot)
    keys = [r.idem for r in app.table.rows_shown]
    app.table.move_cursor(row=keys.index(idem), animate=False)
    await settle(pilot)
    assert app.table.current_idem() == idem
    pane = app.query_one(DetailPane)
    assert await until(pilot, lambda: pane.shown_idem == idem)


async def press(pilot: Pilot[None], *keys: str) -> None:
    await pilot.press(*keys)
    await settle(pilot)


def shown(pilot: Pilot[None]) -> list[str]:
    return [r.idem for r in _app(pilot).table.rows_shown]


async def until(pilot: Pilot[None], predicate: Predicate, limit: float = EFFECT_LIMIT) -> bool:
    """Wait for `predicate()` (sync or async) to hold while the app runs."""
    deadline = time.monotonic() + limit
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value or time.monotonic() > deadline:
            return bool(value)
        await pilot.pause(0.02)


def notified(pilot: Pilot[None], text: str) -> Callable[[], bool]:
    """A predicate: some notification contains `text`."""
    app = _app(pilot)
    return lambda: any(text in n.message for n in app._notifications)
