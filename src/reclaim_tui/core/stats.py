"""What the console's charts show, read from the events table: completions,
failures and API errors per time bucket over the last hour or day, how long
jobs ran (submitted → done), and a per-model breakdown with its cost.

Events carry no index on their time: one on every event would slow every
transition of the ledger's hot path. Their ids grow with time instead (one
clock per ledger: this host's for SQLite, the server's for PostgreSQL), so
the first event of a range is found by bisecting the primary key (a
logarithmic number of point reads) and the range is then read from that id on:
an hour of a busy ledger is its own events, not the table. Events written
out of order by up to SLACK seconds (transactions that committed late) are
still inside the read; each counted event is tested on its own time.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from reclaim_tui.core.cost_totals import CostRow, group_row, usage_sums_sql
from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.dialect import Dialect, Sql
from reclaim_tui.core.ledger.port import Ledger

__all__ = [
    "API_ERROR_NOTES",
    "DURATION_EDGES",
    "RANGES",
    "ChartData",
    "Histogram",
    "ModelStats",
    "Range",
    "Series",
    "chart_data",
    "first_event_id",
]

Range = Literal["hour", "day"]
#: A range's span and bucket width, in seconds: 60 one-minute buckets for the
#: hour, 96 quarter-hours for the day.
RANGES: dict[Range, tuple[int, int]] = {"hour": (3600, 60), "day": (86_400, 900)}
#: Seconds an event's time may run behind one written before it.
SLACK = 300.0
#: Upper bounds (seconds) of the duration histogram's buckets; the last is open.
DURATION_EDGES: tuple[float, ...] = (10, 30, 60, 120, 300, 600, 1800, 3600)

# The notes the engine writes on a row whose API call failed and whose
# status stays (core/engine/transitions.py: after_create, settle_orphan;
# core/engine/polling.py: after_poll, deadlines). Matched with LIKE: a test writes
# them through those functions, so a reworded note fails it.
API_ERROR_NOTES: tuple[str, ...] = (
    "attempt % not created:%",
    "attempt % refused (%",
    "attempt %: outcome unknown (%",
    "poll refused (%",
    "poll error:%",
    "orphan lookup failed:%",
    "deadline of % passed; cancel failed:%",
)
_COMPLETED = "(e.to_status = 'done' AND e.from_status <> 'done')"
_FAILED = "(e.to_status = 'failed' AND e.from_status <> 'failed')"
_API_ERROR = Sql(
    lambda d: (
        "(e.from_status = e.to_status AND ("
        + " OR ".join(f"e.note {d.like} {d.p}" for _ in API_ERROR_NOTES)
        + "))"
    )
)
_AT_OR_AFTER_SQL = Sql(lambda d: f"SELECT id, at FROM events WHERE id >= {d.p} ORDER BY id LIMIT 1")
_FIRST_FROM_SQL = Sql(lambda d: f"SELECT MIN(id) FROM events WHERE id >= {d.p}")
_SERIES_SQL = Sql(
    lambda d: (
        f"SELECT CAST((e.at - {d.p}) * 1000 AS BIGINT) / {d.p},"
        f" SUM(CASE WHEN {_COMPLETED} THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN {_FAILED} THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN {_API_ERROR.of(d)} THEN 1 ELSE 0 END)"
        f" FROM events AS e WHERE e.id >= {d.p} AND e.at >= {d.p} AND e.at <= {d.p} GROUP BY 1"
    )
)
_MODELS_SQL = Sql(
    lambda d: (
        f"SELECT j.model, SUM(CASE WHEN {_COMPLETED} THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN {_FAILED} THEN 1 ELSE 0 END), {usage_sums_sql().of(d)}"
        " FROM events AS e JOIN jobs AS j ON j.id = e.job"
        " LEFT JOIN results AS r ON r.job = j.id"
        f" WHERE e.id >= {d.p} AND e.at >= {d.p} AND ({_COMPLETED} OR {_FAILED})"
        " GROUP BY j.model, 4"
    )
)


@dataclass(frozen=True, slots=True)
class Series:
    """Counts per bucket, oldest first: bucket k covers
    [start + k·bucket_seconds, start + (k+1)·bucket_seconds)."""

    start: float
    bucket_seconds: int
    completions: list[int]
    failures: list[int]
    api_errors: list[int]


@dataclass(frozen=True, slots=True)
class Histogram:
    """Jobs by run time: counts[k] ran below edges[k] (and at least edges[k-1]);
    the last count is everything from edges[-1] on."""

    edges: tuple[float, ...]
    counts: list[int]

    @property
    def labels(self) -> list[str]:
        shown = [_duration(e) for e in self.edges]
        inner = (f"{a}–{b}" for a, b in pairwise(shown))
        return [f"<{shown[0]}", *inner, f"≥{shown[-1]}"]


@dataclass(frozen=True, slots=True)
class ModelStats:
    """One model's (or agent's) jobs that ended in the range, and their cost."""

    model: str
    completed: int
    failed: int
    cost: CostRow


@dataclass(frozen=True, slots=True)
class ChartData:
    range: Range
    now: float
    series: Series
    durations: Histogram
    models: list[ModelStats]


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:g}s"
    if seconds < 3600:
        return f"{seconds / 60:g}m"
    return f"{seconds / 3600:g}h"


async def first_event_id(ledger: Ledger, at: float) -> int:
    """The first event id written at or after `at` (past the last id when none
    is), by bisecting the primary key: ids grow with time."""
    bounds = await ledger.select("SELECT MIN(id), MAX(id) FROM events")
    if not bounds or bounds[0][0] is None:
        return 0
    lo, hi = int(bounds[0][0]), int(bounds[0][1]) + 1
    while lo < hi:
        mid = (lo + hi) // 2
        found = await ledger.select(_AT_OR_AFTER_SQL, [mid])
        event_id, event_at = int(found[0][0]), float(found[0][1])
        if event_at < at:
            lo = event_id + 1
        else:
            hi = mid  # ids in [mid, event_id) do not exist
    found = await ledger.select(_FIRST_FROM_SQL, [lo])
    return int(found[0][0]) if found and found[0][0] is not None else lo


async def chart_data(
    ledger: Ledger, prices: PriceTable, span: Range = "hour", *, now: float | None = None
) -> ChartData:
    """Everything the charts screen draws, for the last hour or day before `now`."""
    now = ledger.clock.now() if now is None else now
    width_s, bucket = RANGES[span]
    buckets = width_s // bucket
    # Whole buckets, the last one holding `now`.
    start = (now // bucket + 1) * bucket - width_s
    first = await first_event_id(ledger, start - SLACK)
    series = await _series(ledger, first, start, now, bucket, buckets)
    durations = await _durations(ledger, first, start)
    models = await _models(ledger, prices, first, start)
    return ChartData(span, now, series, durations, models)


async def _series(
    ledger: Ledger, first: int, start: float, now: float, bucket: int, buckets: int
) -> Series:
    counts = [[0] * buckets for _ in range(3)]
    # Buckets counted in whole milliseconds: integer division floors on both
    # engines (a float CAST truncates on SQLite but rounds on PostgreSQL).
    rows = await ledger.select(
        _SERIES_SQL,
        [start, bucket * 1000, *API_ERROR_NOTES, first, start, now],
    )
    for index, *values in rows:
        k = min(int(index), buckets - 1)
        for series, value in zip(counts, values, strict=True):
            series[k] += int(value or 0)
    return Series(start, bucket, *counts)


async def _durations(ledger: Ledger, first: int, start: float) -> Histogram:
    edges = DURATION_EDGES
    params: list[Any] = [edges[0]]
    for low, high in pairwise(edges):
        params += [low, high]
    params.append(edges[-1])
    rows = await ledger.select(_durations_sql(len(edges)), [*params, first, start])
    return Histogram(edges, [int(v or 0) for v in rows[0]] if rows else [0] * (len(edges) + 1))


def _durations_sql(edges: int) -> Sql:
    """Runs per duration bucket: below the first of `edges` bounds, between
    each two, from the last on (parameters: the bounds, then the first
    event id and the start time)."""

    def build(d: Dialect) -> str:
        below = f"d < {d.p}"
        cases = [below, *(f"d >= {d.p} AND {below}" for _ in range(edges - 1)), f"d >= {d.p}"]
        return (
            "SELECT "
            + ", ".join(f"SUM(CASE WHEN {c} THEN 1 ELSE 0 END)" for c in cases)
            + " FROM (SELECT j.done_at - j.submitted_at AS d FROM events AS e"
            f" JOIN jobs AS j ON j.id = e.job WHERE e.id >= {d.p} AND e.at >= {d.p}"
            f" AND {_COMPLETED} AND j.done_at IS NOT NULL AND j.submitted_at IS NOT NULL) AS runs"
        )

    return Sql(build)


async def _models(ledger: Ledger, prices: PriceTable, first: int, start: float) -> list[ModelStats]:
    rows = await ledger.select(
        _MODELS_SQL,
        [prices.long_context_above, first, start],
    )
    merged: dict[str, ModelStats] = {}
    for model, completed, failed, long, *sums in rows:
        cost = group_row(str(model), str(model), bool(long), sums, prices)
        seen = merged.get(str(model))
        if seen is not None:
            completed, failed = completed + seen.completed, failed + seen.failed
            cost = seen.cost.plus(cost)
        merged[str(model)] = ModelStats(str(model), int(completed), int(failed), cost)
    return sorted(merged.values(), key=lambda m: (-(m.completed + m.failed), m.model))
