"""The pass that asks the API again to cancel the rows whose remote cancel
failed ("cancel pending", cancelling.py has the edges it takes)."""

from __future__ import annotations

import functools

from reclaim_tui.core.engine import batch_pass, cancelling
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.models import PassReport, RemoteInteraction, RemoteState, Row
from reclaim_tui.errors import PermanentReadError

__all__ = ["confirm_cancels"]


async def confirm_cancels(parts: EngineParts) -> PassReport:
    """Ask the API again to cancel the rows whose remote cancel failed."""
    report = PassReport()
    claim_pending = parts.ledger.claim_cancel_pending
    cancel_one = functools.partial(_cancel_one, parts)
    while not parts.circuit.open and (claim := await batch_pass.claimed(parts, claim_pending)):
        async with batch_pass.hold(parts, claim, started_free=True) as batch:
            outcomes = await batch_pass.each(parts, claim.rows, cancel_one, batch)
            now = parts.clock.now()
            todo = [cancelling.after_remote_cancel(r, o, parts.config, now) for r, o in outcomes]
            await batch_pass.apply(parts, todo, report)
    return parts.noted(report)


async def _cancel_one(parts: EngineParts, row: Row) -> RemoteInteraction | Exception:
    handle = row.handle or ""
    out = await batch_pass.outcome(parts.backend.cancel(handle))
    parts.circuit.record(out)
    if isinstance(out, PermanentReadError):
        # The API refuses to cancel a finished interaction: one that
        # completed keeps its paid result (after_remote_cancel).
        look = await batch_pass.outcome(parts.backend.get(handle))
        if isinstance(look, RemoteInteraction) and look.state == RemoteState.COMPLETED:
            return look
    return out
