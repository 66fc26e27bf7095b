"""Delivery to the sink: the reclaim pass hands it what it just stored, the
replay pass what was stored earlier and not delivered. The sink always runs
from the STORED result (never the API); `consumed` is committed after it,
and a failing sink leaves its row `done` for a later replay (with back-off).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import batch_pass, transitions
from reclaim_tui.core.engine.batching import HeldBatch
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.models import PassReport, Row, StoredResult, Transition
from reclaim_tui.core.sinks import BatchSink
from reclaim_tui.errors import SinkError, SinkFolderError

__all__ = ["deliver", "delivery_marks", "replay"]


async def replay(
    parts: EngineParts, *, force: bool = False, idems: Sequence[str] | None = None
) -> PassReport:
    """Deliver stored results of `done` rows whose side effect did not finish.

    `force` also takes rows whose sink back-off has not run out (an
    operator's "replay now"); each row is tried at most once per call.
    """
    report = PassReport()
    seen: set[str] = set()
    while claim := await batch_pass.claimed(
        parts, parts.ledger.claim_undelivered, force=force, idems=idems, exclude=seen
    ):
        seen.update(r.idem for r in claim.rows)
        report.counts["replayed"] += len(claim.rows)
        async with batch_pass.hold(parts, claim, started_free=True) as batch:
            await deliver(parts, claim.rows, report, batch)
    return report


async def deliver(
    parts: EngineParts,
    rows: Sequence[Row],
    report: PassReport,
    batch: HeldBatch,
    stored: dict[str, StoredResult] | None = None,
) -> None:
    """Run the sink from the STORED results (never the API), then commit
    `consumed`; a failing sink leaves its row `done` for a later replay."""
    todo = await delivery_marks(parts, rows, report, batch, stored)
    await batch_pass.apply(parts, todo, report)


async def delivery_marks(
    parts: EngineParts,
    rows: Sequence[Row],
    report: PassReport,
    batch: HeldBatch,
    stored: dict[str, StoredResult] | None = None,
) -> list[Transition]:
    """Run the sink from the STORED results (never the API); the marks it
    leaves to commit: `consumed` where it finished, its back-off where it
    failed. Until they are committed the rows stay `done`, so a crash
    between the two delivers them again (the sink is idempotent by key)."""
    idems = [r.idem for r in rows]
    streaks = {r.idem: r.error_streak for r in rows}
    results = stored if stored is not None else await parts.ledger.results(idems)
    sink = parts.sink

    async def one(idem: str) -> None:
        result = results.get(idem)
        if result is None:
            raise SinkError(f"no stored result for {idem}")
        await sink.deliver(idem, result)

    outcomes: Sequence[tuple[str, Any]]
    if isinstance(sink, BatchSink):
        outcomes = await _deliver_many(sink, idems, results, batch)
    else:
        outcomes = await batch_pass.each(
            parts, idems, one, batch, key=lambda idem: idem, calls_api=False
        )
    crashpoint("after_sink_before_consumed")
    now = parts.clock.now()
    todo = [
        transitions.sink_failed(idem, streaks.get(idem, 0), out, parts.config, now)
        if isinstance(out, BaseException)
        else transitions.delivered(idem, now)
        for idem, out in outcomes
    ]
    report.counts["sink_errors"] += sum(1 for t in todo if t.error)
    return todo


async def _deliver_many(
    sink: BatchSink,
    idems: Sequence[str],
    results: Mapping[str, StoredResult],
    batch: HeldBatch,
) -> list[tuple[str, BaseException | None]]:
    """The whole batch to a sink that makes it durable at once (fewer
    flushes); rows whose lease was lost are left out, as in `batch_pass.each`."""
    outcomes: list[tuple[str, BaseException | None]] = []
    items: list[tuple[str, StoredResult]] = []
    for idem in idems:
        if not batch.holds(idem):
            continue
        batch.started.add(idem)
        result = results.get(idem)
        if result is None:
            outcomes.append((idem, SinkError(f"no stored result for {idem}")))
        else:
            items.append((idem, result))
    if items:
        try:
            delivered = await sink.deliver_many(items)
        except SinkFolderError:
            raise  # the sink's own folder is unsafe: no delivery can go on
        except Exception as exc:  # rule 7: the rows' outcome, not the pass's
            delivered = [exc] * len(items)
        outcomes.extend(zip((idem for idem, _ in items), delivered, strict=True))
    return outcomes
