"""The ledger watch shows what it found after a key's frame, not inside it
(issue 39: the console's keys at p99). The watch looks every second and
after every pass of the loop; what it finds (a new window, the ages, a
row's detail again) was shown as soon as it was read, and landed in the
middle of a cursor key whose row's detail was still being read: the
slowest keys were those two redraws in one. Now the look waits for the
details keys are reading to be shown. Counted, never timed."""

from __future__ import annotations

import asyncio

import pytest

from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.tui.feed import LedgerFeed
from reclaim_tui.tui.widgets.detail_pane import DetailPane

from .conftest import Seeded
from .pilot_helpers import SIZE, settle, until


async def test_a_look_read_while_a_row_s_detail_loads_is_shown_after_it(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0  # the test starts each look itself
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        feed, table = app.main.feed, app.table
        reader = feed.opened()
        gate, completions_read = asyncio.Event(), asyncio.Event()
        real_detail, real_completions = reader.detail, reader.completions_since

        async def detail(idem: str) -> Detail:
            await gate.wait()  # the row's detail is on its way
            return await real_detail(idem)

        async def completions_since(seen: int) -> tuple[list[float], int]:
            try:
                return await real_completions(seen)
            finally:
                completions_read.set()  # the look's last read

        monkeypatch.setattr(reader, "detail", detail)
        monkeypatch.setattr(reader, "completions_since", completions_since)
        pages: list[str] = []
        real_load = LedgerFeed.load_page

        def load_page(self: LedgerFeed, move: str, *args: object, **kwargs: object) -> object:
            pages.append(move)
            return real_load(self, move, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(LedgerFeed, "load_page", load_page)
        await pilot.press("down")
        assert await until(pilot, lambda: any(w.group == "detail" for w in app.main.workers))
        seeded.clock.advance(3.0)  # every age moves
        feed.watch(force=True)  # a pass of the loop ended: look now
        assert await until(pilot, completions_read.is_set)
        await pilot.pause()
        assert pages == []  # the look waits for the row's detail
        gate.set()
        assert await until(pilot, lambda: pages == ["from"])
        await settle(pilot)
        pane = app.main.query_one(DetailPane)
        assert pane.shown_idem == table.current_idem() == table.row_keys()[1]
