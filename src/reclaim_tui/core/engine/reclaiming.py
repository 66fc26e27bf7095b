"""The reclaim pass: poll every due `submitted` row (polling.py turns each
answer into its transition), cancel what ran past its deadline, store what
completed and deliver exactly what was just committed `done` (delivering.py).
"""

from __future__ import annotations

import contextlib
import functools

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import batch_pass, delivering, polling
from reclaim_tui.core.engine.batching import HeldBatch
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.models import (
    PassReport,
    RemoteInteraction,
    Row,
    Status,
    StoredResult,
    Transition,
)

__all__ = ["reclaim"]


async def reclaim(parts: EngineParts) -> PassReport:
    """Poll every due `submitted` row, each at most once (a row due again
    at once waits for the next pass); store and deliver what completed.

    One transaction a batch: it records the batch's poll outcomes (`done`
    with its stored result, before the sink runs), the previous batch's
    delivery marks (`consumed`, after its sink ran) and claims the next
    batch. A batch's leases are held until its marks are written."""
    report = PassReport()
    polled: set[str] = set()
    marks: list[Transition] = []  # the previous batch's, written with this one's outcomes
    async with contextlib.AsyncExitStack() as holds:
        claim = None
        if not parts.circuit.open:
            claim = await batch_pass.claimed(
                parts, parts.ledger.claim_pollable, limit=parts.flight(), exclude=polled
            )
        held = await _hold(parts, holds, claim) if claim is not None else None
        previous: contextlib.AsyncExitStack | None = None
        while claim is not None and held is not None:
            chunk, batch = held
            polled.update(r.idem for r in claim.rows)
            get_one = functools.partial(_get_one, parts)
            outcomes = await batch_pass.each(parts, claim.rows, get_one, batch)
            report.counts["polled"] += len(outcomes)
            crashpoint("after_fetch_before_done")
            now = parts.clock.now()
            todo = [polling.after_poll(r, o, parts.config, now) for r, o in outcomes]
            applied, upcoming = await batch_pass.apply_claiming(
                parts, [*marks, *todo], report, exclude=polled
            )
            if previous is not None:
                await previous.aclose()  # its marks are written: its leases may go
            held = await _hold(parts, holds, upcoming) if upcoming is not None else None
            # Deliver exactly what was just committed with `done` (the same
            # values, not a second read of them).
            now = parts.clock.now()
            stored = {
                t.idem: _stored(t.idem, t.result, now)
                for t in todo
                if t.to == Status.DONE and t.result is not None and t.idem in applied
            }
            done = [row for row in claim.rows if row.idem in stored]
            crashpoint("after_done_before_sink")
            marks = await delivering.delivery_marks(parts, done, report, batch, stored)
            previous, claim = chunk, upcoming
        if marks:
            await batch_pass.apply(parts, marks, report)
    return parts.noted(report)


async def _hold(
    parts: EngineParts, holds: contextlib.AsyncExitStack, claim: Claim
) -> tuple[contextlib.AsyncExitStack, HeldBatch]:
    """Hold a claimed batch (its leases renewed) from the moment it is
    claimed until its own stack is closed, or the pass's ends."""
    chunk = contextlib.AsyncExitStack()
    await holds.enter_async_context(chunk)
    batch = await chunk.enter_async_context(batch_pass.hold(parts, claim, started_free=True))
    return chunk, batch


async def _get_one(parts: EngineParts, row: Row) -> RemoteInteraction | polling.Overdue | Exception:
    assert row.handle is not None, "submitted rows always have a handle"
    out = await batch_pass.outcome(parts.backend.get(row.handle))
    parts.circuit.record(out)
    if not isinstance(out, RemoteInteraction):
        return out
    deadline = polling.overdue(row, out, parts.config, parts.clock.now())
    if deadline is None:
        return out
    # Past its deadline: cancel it, and keep whatever it produced so far.
    cancelled = await batch_pass.outcome(parts.backend.cancel(row.handle))
    parts.circuit.record(cancelled)
    return polling.Overdue(out, deadline, cancelled)


def _stored(idem: str, result: RemoteInteraction, now: float) -> StoredResult:
    return StoredResult(
        idem, result.id, result.output_text or "", result.usage, result.raw_json(), now
    )
