"""A tab key, and a key to the first or the last window, reads its window
and the detail of the row its cursor lands on in ONE call to the thread of
the console's interactive SQLite connection (issue 39, item 5: each call
costs the event loop a hand-off and a wake-up on the key's path); the
detail shown is the landing row's. Counted, nothing here is timed."""

from __future__ import annotations

import pytest

from reclaim_tui.tui.widgets.detail_pane import DetailPane
from tests.helpers.thread_calls import count_thread_calls

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


@pytest.mark.parametrize("keys", [("2",), ("3",), ("G",), ("G", "g")])
async def test_a_key_to_another_window_is_one_call_to_sqlites_thread(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch, keys: tuple[str, ...]
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # no look at the ledger in between
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if keys[0] == "G":
            await press(pilot, "1")  # the tab of every row: more than a window's rows
        reader = app.main.feed.opened()
        conn = reader._fast.connection
        calls = count_thread_calls(conn, monkeypatch)
        for key in keys:
            calls.clear()
            await press(pilot, key)
            assert sum(calls.values()) == 1, (key, calls)
            current = app.main.table.current_idem()
            assert current is not None
            assert app.main.query_one(DetailPane).shown_idem == current
