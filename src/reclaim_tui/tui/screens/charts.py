"""Charts: completions, failures and API errors over the last hour (per
minute) or day (per quarter-hour), how long jobs ran, and each model's jobs
and cost. Re-read every few seconds while open.

The screen does no I/O: it is given a loader (`chart_loader(ledger, prices)`
over a read-only ledger, or any `async (range) -> ChartData`) and calls it
from a worker. Each chart keeps the points it last drew in `points`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, cast

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Vertical
from textual.screen import ModalScreen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from reclaim_tui.core.costs import PriceTable, format_usd
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.stats import ChartData, ModelStats, Range, chart_data

__all__ = [
    "ActivityChart",
    "ChartLoader",
    "ChartsScreen",
    "DurationChart",
    "ModelChart",
    "chart_loader",
]

ChartLoader = Callable[[Range], Awaitable[ChartData]]
#: The day's chart is re-read on every this many refresh ticks: it reads a
#: day of events, the hour's a 24th of that.
DAY_EVERY_TICKS = 12
_SPAN_TEXT = {"hour": "last hour, per minute", "day": "last day, per 15 minutes"}


def chart_loader(ledger: Ledger, prices: PriceTable) -> ChartLoader:
    """Chart data read from `ledger` (the console's background reader)."""

    async def load(span: Range) -> ChartData:
        return await chart_data(ledger, prices, span)

    return load


class _Chart(PlotextPlot):
    """A plot that remembers what it was last given to draw."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.points: dict[str, list[float]] = {}
        self.labels: list[str] = []

    @property
    def _plt(self) -> Any:
        # plotext's figure is untyped: its calls go through Any.
        return cast(Any, self.plt)

    def _start(self, title: str) -> Any:
        plt = self._plt
        plt.clear_data()
        plt.clear_figure()
        plt.title(title)
        return plt


class ActivityChart(_Chart):
    """Completions, failures and API errors per bucket, oldest left."""

    def show(self, data: ChartData) -> None:
        series = data.series
        self.points = {
            "completed": [float(n) for n in series.completions],
            "failed": [float(n) for n in series.failures],
            "api errors": [float(n) for n in series.api_errors],
        }
        buckets = len(series.completions)
        self.labels = [
            _ago(data.now, series.start + k * series.bucket_seconds) for k in range(buckets)
        ]
        plt = self._start(f"jobs · {_SPAN_TEXT[data.range]}")
        x = list(range(buckets))
        for (name, values), colour in zip(
            self.points.items(), ("green", "red", "orange"), strict=True
        ):
            plt.plot(x, values, label=name, color=colour, marker="braille")
        step = max(1, buckets // 6)
        plt.xticks(x[::step], self.labels[::step])
        self.refresh()


class DurationChart(_Chart):
    """Jobs by run time (submitted → done)."""

    def show(self, data: ChartData) -> None:
        self.labels = data.durations.labels
        self.points = {"jobs": [float(n) for n in data.durations.counts]}
        plt = self._start("run time (submitted → done)")
        plt.bar(self.labels, self.points["jobs"], color="blue", width=0.6)
        self.refresh()


class ModelChart(_Chart):
    """Each model's (or agent's) completed and failed jobs in the range."""

    def show(self, data: ChartData) -> None:
        models = data.models[:8]
        self.labels = [m.model for m in models]
        self.points = {
            "completed": [float(m.completed) for m in models],
            "failed": [float(m.failed) for m in models],
        }
        plt = self._start("by model")
        if models:
            plt.multiple_bar(
                [_short(m) for m in self.labels],
                [self.points["completed"], self.points["failed"]],
                labels=["completed", "failed"],
                color=["green", "red"],
            )
        self.refresh()


def _short(name: str) -> str:
    return name if len(name) <= 18 else name[:17] + "…"


def _ago(now: float, at: float) -> str:
    minutes = round((now - at) / 60)
    return "now" if minutes <= 0 else f"-{minutes}m" if minutes < 120 else f"-{minutes // 60}h"


def models_text(models: Sequence[ModelStats]) -> str:
    """One line per model: jobs and what they cost (unknown prices said)."""
    if not models:
        return "no job ended in this range"
    lines = []
    for m in models:
        cost = format_usd(m.cost.usd)
        if m.cost.unknown:
            cost += f" + {m.cost.unknown} of unknown price"
        lines.append(f"{m.model}: {m.completed} done, {m.failed} failed · {cost}")
    return "\n".join(lines)


class ChartsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ChartsScreen { align: center middle; }
    ChartsScreen > Vertical {
        width: 100%; height: 100%; border: round $accent; background: $surface;
    }
    ChartsScreen Grid { grid-size: 2 2; grid-rows: 1fr 1fr; height: 1fr; }
    ChartsScreen #chart-activity { column-span: 2; }
    ChartsScreen #chart-models-text { height: auto; max-height: 6; color: $text-muted; }
    ChartsScreen #chart-status { height: 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("t", "toggle_range", "Last hour / last day"),
        Binding("ctrl+r", "reload", "Re-read"),
    ]

    def __init__(self, load: ChartLoader, *, span: Range = "hour", every: float = 5.0) -> None:
        super().__init__()
        self.load = load
        self.span: Range = span
        self.every = every
        self.data: ChartData | None = None
        self.ticks = 0

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "charts"
            box.border_subtitle = "t last hour / last day · ctrl+r re-read · esc closes"
            with Grid():
                yield ActivityChart(id="chart-activity")
                yield DurationChart(id="chart-durations")
                yield ModelChart(id="chart-models")
            yield Static("", id="chart-models-text")
            yield Static("reading…", id="chart-status")

    def on_mount(self) -> None:
        self.set_interval(self.every, self._tick)
        self.action_reload()

    def _tick(self) -> None:
        self.ticks += 1
        if self.span == "hour" or self.ticks % DAY_EVERY_TICKS == 0:
            self.action_reload()

    def action_toggle_range(self) -> None:
        self.span = "day" if self.span == "hour" else "hour"
        self.query_one("#chart-status", Static).update(f"reading the {_SPAN_TEXT[self.span]}…")
        self.action_reload()

    def action_reload(self) -> None:
        self._read(self.span)

    @work(exclusive=True, group="charts", exit_on_error=False)
    async def _read(self, span: Range) -> None:
        try:
            data = await self.load(span)
        except Exception as exc:  # a busy or unreachable ledger: said, not fatal
            self.query_one("#chart-status", Static).update(f"could not read the charts: {exc}")
            return
        if span == self.span:
            self.show(data)

    def show(self, data: ChartData) -> None:
        """Draw `data` in every chart."""
        self.data = data
        self.query_one(ActivityChart).show(data)
        self.query_one(DurationChart).show(data)
        self.query_one(ModelChart).show(data)
        self.query_one("#chart-models-text", Static).update(models_text(data.models))
        total = sum(data.series.completions)
        self.query_one("#chart-status", Static).update(
            f"{_SPAN_TEXT[data.range]}: {total} completed, {sum(data.series.failures)} failed,"
            f" {sum(data.series.api_errors)} API errors"
        )
