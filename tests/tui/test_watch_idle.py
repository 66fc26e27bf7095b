"""The console's watch: an idle ledger is not a change (a review found every
look of an idle console counted the newest row as new, and re-read the counts
and the window every second: ~200 ms a look at 1M rows)."""

from __future__ import annotations

from typing import Any

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.inbox import InboxStats
from reclaim_tui.tui.watching import LedgerWatch
from reclaim_tui.tui.widgets.ledger_table import LedgerTable

from .conftest import Seeded


class StubReader:
    """changed_since answers from a list of (count, latest) in turn."""

    def __init__(self, answers: list[tuple[int, float]]) -> None:
        self.answers = answers
        self.asked: list[float] = []

    async def changed_since(self, since: float) -> tuple[int, float]:
        self.asked.append(since)
        return self.answers.pop(0)

    # The counts, read after a change (cheap here): how often is the figure.
    counted = 0

    async def refresh_liveness(self) -> list[str]:
        return []

    async def attention(self, days: float) -> Any:
        return None

    async def inbox(self) -> InboxStats:
        return InboxStats(0, None, 0, None)

    async def counts(self) -> tuple[dict[str, int], int]:
        self.counted += 1
        return {}, 0


async def test_an_idle_ledger_is_not_a_change_and_a_late_write_is() -> None:
    watch = LedgerWatch(retention_days=55)
    clock = ManualClock()
    watch._counted_at = clock.now()  # counts were just read: only rows matter
    reader = StubReader(
        [
            (3, 100.0),  # first look: everything is new
            (1, 100.0),  # the window now starts at 95: the newest row, again
            (1, 100.0),  # still nothing
            (2, 100.0),  # a writer whose clock is behind wrote at 98
            (1, 104.0),  # a newer update
            (1, 104.0),
        ]
    )
    seen = [(await watch.look(reader, clock, False)).changed for _ in range(6)]  # type: ignore[arg-type]
    assert seen == [True, False, False, True, True, False]
    assert reader.asked == [-5.0, 95.0, 95.0, 95.0, 95.0, 99.0]
    assert reader.counted == 3  # after each change, never on an idle look


class AttentionReader(StubReader):
    """Counts how often the rows needing attention are scanned."""

    scanned = 0

    async def attention(self, days: float) -> Any:
        self.scanned += 1
        return None


async def test_the_asking_count_follows_an_answer_at_once() -> None:
    """Issue 25, 8: after an answer the "asking" count lagged 30 s. A forced
    look (after an action or a pass) re-counts the rows needing attention
    when that scan is cheap; an idle console still scans only every 30 s."""
    watch = LedgerWatch(retention_days=55)
    clock = ManualClock()
    reader = AttentionReader([(1, 100.0)] * 6)
    await watch.look(reader, clock, False)  # the first look counts everything
    assert reader.scanned == 1
    clock.advance(1)
    await watch.look(reader, clock, True)  # the operator answered a row
    assert reader.scanned == 2
    for _ in range(3):  # idle: counts every 15 s, attention every 30 s
        clock.advance(16)
        await watch.look(reader, clock, False)
    assert reader.scanned == 3


async def test_a_look_that_outlives_its_screen_draws_nothing(seeded: Seeded) -> None:
    """The watch's look is awaited in a worker; when the app closes meanwhile
    the main screen's widgets are gone, and the redraw failed the worker
    (NoMatches 'LedgerTable', seen as a failed console test under load)."""
    app = seeded.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await app.main.query_one(LedgerTable).remove()
        await app.main.feed._look(False)  # no error: nothing left to draw on
