"""What one key sets going on the UI thread, counted (issue 39: the console's
costliest keys; nothing here times anything).

Per tab key, cursor key and page key, after the console settled: the
messages Textual dispatches (a `no_dispatch` wake-up is not counted: how
many of those coalesce depends on timing), the Textual workers and the
asyncio tasks started, and the widgets restyled. The cuts pinned here:

- a key waiting for its burst to end (tui/typeahead.py) waits on the event
  loop's timer, not in a worker of its own (a worker is a task, three state
  messages and a reference cycle a key);
- no worker's state messages are posted to the app or the main screen,
  which do not listen to them;
- the reads' messages (RowsChanged, DetailLoaded) and the table's
  RowHighlighted stop at the main screen, which handles them, instead of
  bubbling on to the app;
- a tab key's lone-highlight timer (actions/view.py) is the event loop's,
  cancelled when the window lands, not a Textual timer's task;
- no key restyles a widget: the tabs draw the active tab's look themselves
  (a class switched made Textual apply its rules to both tabs again).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from textual import events
from textual.css.stylesheet import Stylesheet
from textual.dom import DOMNode
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerState
from textual.worker_manager import WorkerManager

from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.tabs import TABS

from .conftest import Seeded
from .pilot_helpers import press, settle

#: Keys counted per kind (after each kind's keys were pressed once first).
KEYS = 10


@dataclass
class Traffic:
    """What the keys set going, by (node, message), (node, group) and so on."""

    messages: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    workers: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    tasks: collections.Counter[str] = field(default_factory=collections.Counter)
    restyled: collections.Counter[str] = field(default_factory=collections.Counter)

    def per_key(self, counter: collections.Counter[Any]) -> float:
        return sum(counter.values()) / KEYS


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Traffic]:
    traffic = Traffic()
    dispatch = MessagePump._dispatch_message

    async def dispatched(self: MessagePump, message: Message) -> None:
        if not message.no_dispatch:
            traffic.messages[type(self).__name__, type(message).__qualname__] += 1
        await dispatch(self, message)

    new_worker = WorkerManager._new_worker

    def started(self: WorkerManager, work: Any, node: DOMNode, **options: Any) -> Worker[Any]:
        traffic.workers[type(node).__name__, options.get("group", "default")] += 1
        return new_worker(self, work, node, **options)

    apply = Stylesheet.apply

    def restyle(self: Stylesheet, node: DOMNode, **options: Any) -> None:
        traffic.restyled[type(node).__name__] += 1
        apply(self, node, **options)

    def task(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        traffic.tasks[getattr(coro, "__qualname__", type(coro).__name__)] += 1
        return asyncio.Task(coro, loop=loop)

    monkeypatch.setattr(MessagePump, "_dispatch_message", dispatched)
    monkeypatch.setattr(WorkerManager, "_new_worker", started)
    monkeypatch.setattr(Stylesheet, "apply", restyle)
    loop = asyncio.get_running_loop()
    loop.set_task_factory(task)  # type: ignore[arg-type]
    try:
        yield traffic
    finally:
        loop.set_task_factory(None)
        monkeypatch.undo()


def _quiet(app: ReclaimApp) -> bool:
    """No worker busy but the loop, no key held for its burst, no message queued."""
    busy = [
        w
        for w in app.workers
        if w.group != "loop" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
    ]
    nodes = [app, *app.screen.walk_children(with_self=True)]
    return not busy and not app.keys_held and all(n._message_queue.empty() for n in nodes)


async def _key(app: ReclaimApp, key: str) -> None:
    """Post `key` as the terminal would and wait, without posting anything
    of the test's own (Pilot's waits post a message to every widget), until
    the console is quiet again."""
    app.post_message(events.Key(key, key if len(key) == 1 else None))
    quiet = 0
    while quiet < 3:
        await asyncio.sleep(0)
        quiet = quiet + 1 if _quiet(app) else 0


def _tab_keys(app: ReclaimApp) -> tuple[str, str]:
    """Two tabs with rows: a new window each way."""
    state = app.main.state
    n = next(n for n in range(1, len(TABS)) if state.tab_count(TABS[n]) > 0)
    return str(n + 1), "1"


async def _traffic(seeded: Seeded, monkeypatch: pytest.MonkeyPatch, kind: str) -> Traffic:
    app = seeded.app()
    app.config.watch_every = 3600.0  # only the keys' own work
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        keys = {"tab": _tab_keys(app), "cursor": ("down", "up"), "page": ("G", "g")}[kind]
        renders, shows = app.table.renders, app.main.query_one("#detail").shows  # type: ignore[attr-defined]
        for key in keys:  # what a key makes once is not a key's
            await press(pilot, key)
        with counting(monkeypatch) as traffic:
            for n in range(KEYS):
                await _key(app, keys[n % 2])
        # Each key did what it is for.
        if kind == "cursor":
            assert app.main.query_one("#detail").shows >= shows + KEYS  # type: ignore[attr-defined]
        else:
            assert app.table.renders >= renders + KEYS + 2
        assert app.main.state.tab == ("all" if kind == "tab" else app.main.state.tab)
    return traffic


@pytest.mark.parametrize(
    ("kind", "group", "messages"),
    # Dispatched a key now (21, 12 and 16.5; before: 28, 20 and 23.5), with
    # room for one more: a slow read lets the tab's lone highlight fire.
    [("tab", "page", 22), ("cursor", "detail", 13), ("page", "page", 17.5)],
)
async def test_a_key_starts_one_worker_and_dispatches_only_what_is_handled(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, kind: str, group: str, messages: float
) -> None:
    traffic = await _traffic(seeded, monkeypatch, kind)
    seen = traffic.messages.most_common()
    # One read a key, in the screen's worker; no worker waits for a burst.
    assert dict(traffic.workers) == {("MainScreen", group): KEYS}, traffic.workers
    assert dict(traffic.tasks) == {"Worker._run": KEYS}, traffic.tasks
    # No worker's state messages, and nothing of the screen's on the app.
    assert [m for m in seen if m[0][1] == "Worker.StateChanged"] == []
    on_app = {message for (node, message) in traffic.messages if node == "ReclaimApp"}
    assert on_app <= {"Key", "InvokeLater"}, seen
    assert traffic.per_key(traffic.messages) <= messages, seen
    # No key restyles a widget: a tab key's two tabs draw the active look
    # themselves (status_tabs.py), no class switched.
    assert dict(traffic.restyled) == {}, traffic.restyled
