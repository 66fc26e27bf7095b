"""A refresh that changes nothing lays nothing out again (issue 27: the console
under load). A new window, a look at the ledger and the counts read with it
show the loop bar, the tabs' counts and the row's detail again; updating any
of them lays the whole screen out again, the largest part of a key's time on
the UI thread. Counted here: re-reading an unchanged ledger updates none."""

from __future__ import annotations

import pytest
from textual.content import Content
from textual.visual import VisualType
from textual.widgets import Static, Tab

from reclaim_tui.tui.widgets.detail_body import DetailBody
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.loop_bar import LoopBar

from .conftest import Seeded
from .pilot_helpers import SIZE, press, settle


async def test_an_unchanged_ledger_read_again_updates_no_tab_bar_or_detail(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    updated: list[str] = []
    real = Static.update

    def counting(self: Static, content: VisualType = "", *, layout: bool = True) -> None:
        if isinstance(self, Tab | LoopBar):
            updated.append(type(self).__name__)
        real(self, content, layout=layout)

    real_body = DetailBody.update

    def body_update(self: DetailBody, content: Content, *, layout: bool = True) -> None:
        updated.append("detail")
        real_body(self, content, layout=layout)

    monkeypatch.setattr(Static, "update", counting)
    monkeypatch.setattr(DetailBody, "update", body_update)
    app = seeded.app(paused=True, interval=3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        detail = app.main.query_one(DetailPane)
        assert detail.shown_idem is not None  # the first row's detail is shown
        body = detail.query_one("#detail-body", DetailBody)
        before = (str(app.main.query_one(LoopBar).render()), str(body.render()))
        updated.clear()
        for _ in range(3):
            await press(pilot, "ctrl+r")  # read the window and the counts again
            await settle(pilot)
        app.main.rerender()  # and a redraw of the same window
        await settle(pilot)
        assert not updated, updated
        # What is shown is what was (the clock stood still: the same ages).
        after = (str(app.main.query_one(LoopBar).render()), str(body.render()))
        assert after == before and detail.shown_idem in after[1]
