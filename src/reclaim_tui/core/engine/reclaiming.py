"""The reclaim pass: poll every due `submitted` row (polling.py turns each
answer into its transition), cancel what ran past its deadline, store what
completed and deliver exactly what was just committed `done` (delivering.py).
"""

from __future__ import annotations

import functools

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import batch_pass, delivering, polling
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.models import PassReport, RemoteInteraction, Row, Status, StoredResult

__all__ = ["reclaim"]


async def reclaim(parts: EngineParts) -> PassReport:
    """Poll every due `submitted` row, each at most once (a row due again
    at once waits for the next pass); store and deliver what completed."""
    report = PassReport()
    polled: set[str] = set()
    while not parts.circuit.open and (
        claim := await batch_pass.claimed(
            parts, parts.ledger.claim_pollable, limit=parts.flight(), exclude=polled
        )
    ):
        polled.update(r.idem for r in claim.rows)
        async with batch_pass.hold(parts, claim, started_free=True) as batch:
            get_one = functools.partial(_get_one, parts)
            outcomes = await batch_pass.each(parts, claim.rows, get_one, batch)
            report.counts["polled"] += len(outcomes)
            crashpoint("after_fetch_before_done")
            now = parts.clock.now()
            todo = [polling.after_poll(r, o, parts.config, now) for r, o in outcomes]
            applied = await batch_pass.apply(parts, todo, report)
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
            if done:
                await delivering.deliver(parts, done, report, batch, stored)
    return parts.noted(report)


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
