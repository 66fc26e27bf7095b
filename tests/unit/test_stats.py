"""Chart statistics from the events table, on SQLite and PostgreSQL: the
bisected first event of a range, completions / failures / API errors per
bucket, the run-time histogram and the per-model breakdown."""

from __future__ import annotations

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.costs import load_prices
from reclaim_tui.core.engine.polling import after_poll
from reclaim_tui.core.engine.transitions import EngineConfig, after_create, settle_orphan
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Status
from reclaim_tui.core.stats import chart_data, first_event_id
from reclaim_tui.errors import MaybeCreatedError, NotCreatedError, TransientReadError
from tests.helpers.ledger_rows import put_row

PRICES = load_prices(None, environ={})
USAGE = {"total_input_tokens": 1000, "total_output_tokens": 1000}  # flash: 0.0035 $


async def _min_id_at_or_after(ledger: Ledger, at: float) -> int | None:
    rows = await ledger.select(Sql(lambda d: f"SELECT MIN(id) FROM events WHERE at >= {d.p}"), [at])
    return rows[0][0]


async def test_first_event_id_bisects_over_gaps(ledger: Ledger, clock: ManualClock) -> None:
    times = []
    for _ in range(12):
        times.append(clock.now())
        await put_row(ledger, clock, runs=7)
        clock.advance(13)
    async with ledger.write() as db:  # gaps, as a prune or a rolled-back insert leaves
        await db.execute(Sql(lambda d: f"DELETE FROM events WHERE id {d.pct} 3 = 0"), ())
    for at in [times[0] - 1, *times, times[5] + 3, clock.now() + 100]:
        expected = await _min_id_at_or_after(ledger, at)
        top = (await ledger.select("SELECT MAX(id) FROM events"))[0][0]
        assert await first_event_id(ledger, at) == (expected if expected else top + 1)


async def test_first_event_id_of_an_empty_table(ledger: Ledger) -> None:
    assert await first_event_id(ledger, 0.0) == 0


async def _api_error_notes(ledger: Ledger, clock: ManualClock) -> list[str]:
    """The notes the engine writes for failed API calls, from its own functions."""
    config = EngineConfig()
    now = clock.now()
    sent = await ledger.get(await put_row(ledger, clock, end=Status.RESERVING))
    polled = await ledger.get(await put_row(ledger, clock, end=Status.SUBMITTED))
    assert sent is not None and polled is not None
    outcomes = [
        after_create(sent, NotCreatedError("busy", 500, retryable=True), config, now),
        after_create(sent, NotCreatedError("slow", 429, retryable=True, cause="rate"), config, now),
        after_create(sent, MaybeCreatedError("reset", 503), config, now),
        after_poll(polled, TransientReadError("bad gateway", 502), config, now),
        after_poll(polled, TransientReadError("busy", 429, cause="rate"), config, now),
        settle_orphan(sent, TransientReadError("x", 500), config, now, force=False, looked_up=True),
    ]
    for t in outcomes:
        assert t.expect == t.to, t.note
        await ledger.add_event(t.idem, "test", t.note, t.to.value)
    return [t.note for t in outcomes]


async def test_series_counts_completions_failures_and_api_errors(
    ledger: Ledger, clock: ManualClock
) -> None:
    # An hour and a half ago: outside the hour, inside the day.
    await put_row(ledger, clock, runs=5)
    clock.advance(90 * 60)
    base = clock.now()
    await put_row(ledger, clock, runs=30)  # done at base + 30 s
    await put_row(ledger, clock, runs=30)  # done at base + 60 s
    await put_row(ledger, clock, end=Status.FAILED, runs=30)  # base + 90 s
    notes = await _api_error_notes(ledger, clock)
    await ledger.add_event(
        await put_row(ledger, clock, end=Status.RESERVING), "test", "sending create", "reserving"
    )  # a same-status note that is not an error
    now = base + 100
    hour = await chart_data(ledger, PRICES, "hour", now=now)
    series = hour.series
    assert (series.bucket_seconds, len(series.completions)) == (60, 60)
    assert series.start + 60 * 60 > now >= series.start + 59 * 60
    assert sum(series.completions) == 2
    assert sum(series.failures) == 1
    assert sum(series.api_errors) == len(notes)
    minute_of = int((base + 30 - series.start) // 60)
    assert series.completions[minute_of] + series.completions[minute_of + 1] == 2
    day = await chart_data(ledger, PRICES, "day", now=now)
    assert (day.series.bucket_seconds, len(day.series.completions)) == (900, 96)
    assert sum(day.series.completions) == 3


async def test_durations_and_models(ledger: Ledger, clock: ManualClock) -> None:
    await put_row(ledger, clock, runs=5, usage=USAGE)
    await put_row(ledger, clock, runs=45, usage=USAGE)
    await put_row(ledger, clock, model="gemini-pro-latest", runs=4000, usage=USAGE)
    await put_row(ledger, clock, model="gemini-pro-latest", end=Status.FAILED, runs=1)
    await put_row(ledger, clock, model="deep-research-preview-04-2026", agent=True, runs=700,
                  usage={"total_output_tokens": 10_000})  # fmt: skip
    await put_row(ledger, clock, model="mystery-model", runs=1, usage=USAGE)
    data = await chart_data(ledger, PRICES, "day")
    labels = data.durations.labels
    counts = dict(zip(labels, data.durations.counts, strict=True))
    assert labels[0] == "<10s" and labels[-1] == "≥1h"
    assert counts == {
        "<10s": 2, "10s–30s": 0, "30s–1m": 1, "1m–2m": 0, "2m–5m": 0, "5m–10m": 0,
        "10m–30m": 1, "30m–1h": 0, "≥1h": 1,
    }  # fmt: skip
    models = {m.model: m for m in data.models}
    assert (models["gemini-flash-latest"].completed, models["gemini-flash-latest"].failed) == (2, 0)
    assert models["gemini-flash-latest"].cost.usd == pytest.approx(2 * 3500 / 1e6)
    pro = models["gemini-pro-latest"]
    assert (pro.completed, pro.failed, pro.cost.priced) == (1, 1, 1)
    assert models["deep-research-preview-04-2026"].cost.usd == pytest.approx(0.12)
    assert models["mystery-model"].cost.unknown == 1
    assert data.models[0].model == "gemini-flash-latest"  # most jobs first (a tie: by name)
