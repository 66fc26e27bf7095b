"""The completions' caption lays nothing out (issue 39: the console's keys
at p99). The sparkline and its caption are shown again at every look at
the ledger (each second); a new caption asked for a layout of the whole
screen, and that layout landed in the slowest keys. The caption's size is
its line's; what did not change is not drawn again. Counted, never timed."""

from __future__ import annotations

import pytest
from textual.widget import Widget
from textual.widgets import Static

from reclaim_tui.tui.widgets.throughput import Throughput

from .conftest import START, Seeded
from .pilot_helpers import SIZE, settle


async def test_new_completions_redraw_the_sparkline_and_caption_without_a_layout(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = seeded.app()
    app.config.watch_every = 3600.0
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        throughput = app.main.query_one(Throughput)
        caption = throughput.query_one("#throughput-caption", Static)
        asked: list[tuple[str, bool]] = []
        real = Widget.refresh

        def refresh(self: Widget, *regions: object, **kwargs: object) -> Widget:
            if self is throughput or throughput in self.ancestors:
                asked.append((type(self).__name__, bool(kwargs.get("layout"))))
            return real(self, *regions, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Widget, "refresh", refresh)
        now = 60.0 * (START // 60 + 60) + 10  # ten seconds into a minute
        for n in range(5):
            throughput.record([now + n], now + n)  # one more completion each look
            await pilot.pause()
        assert asked and not [who for who, layout in asked if layout]
        asked.clear()
        throughput.record([], now + 5)  # nothing new: nothing drawn
        await pilot.pause()
        assert asked == []
        await settle(pilot)
        assert str(caption.render()) == "5/min now · 5 in 30 min · peak 5/min"
