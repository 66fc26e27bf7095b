"""Completions per minute over the last half hour, as a sparkline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline, Static

__all__ = ["Throughput"]

MINUTES = 30


class Throughput(Vertical):
    """Buckets completion times by minute; `now` decides the last bucket."""

    DEFAULT_CSS = """
    Throughput { height: 4; border: round $panel-lighten-2; padding: 0 1;
                 border-title-color: $foreground-muted; border-title-style: bold; }
    Throughput Sparkline { height: 1; }
    Throughput Static { height: 1; width: 1fr; color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "completions / min"
        self._minutes: Counter[int] = Counter()
        self._shown: tuple[list[float], str] | None = None

    def compose(self) -> ComposeResult:
        yield Sparkline([0.0] * MINUTES, summary_function=max)
        yield Static("", id="throughput-caption")

    def record(self, times: Iterable[float], now: float) -> None:
        for at in times:
            self._minutes[int(at // 60)] += 1
        self.show(now)

    def show(self, now: float) -> None:
        current = int(now // 60)
        for old in [m for m in self._minutes if m <= current - MINUTES]:
            del self._minutes[old]
        data = [float(self._minutes.get(m, 0)) for m in range(current - MINUTES + 1, current + 1)]
        total, last = int(sum(data)), int(data[-1])
        caption = f"{last}/min now · {total} in {MINUTES} min · peak {int(max(data))}/min"
        # Shown at every look at the ledger (each second): what has not
        # changed is not drawn again, and the caption's size is its line's
        # (CSS above), so a new caption lays nothing out (a layout is of
        # the whole screen).
        shown = self._shown
        if shown is not None and shown[0] == data and shown[1] == caption:
            return
        self._shown = (data, caption)
        if shown is None or shown[0] != data:
            self.query_one(Sparkline).data = data
        if shown is None or shown[1] != caption:
            self.query_one("#throughput-caption", Static).update(caption, layout=False)
