"""The recovery pass: settle `reserving` rows whose create may have been
sent and whose holder is gone (orphans). The interaction such a create made
is adopted when it can be found for the row's current attempt — an event
of the webhook inbox the API confirms, else the backend's label lookup —
and otherwise the OrphanPolicy applies (transitions.settle_orphan).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

from reclaim_tui.core.engine import batch_pass, transitions
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.models import PassReport, RemoteInteraction, Row, labelled_attempt
from reclaim_tui.errors import InteractionGoneError

__all__ = ["recover_orphans"]

log = logging.getLogger("reclaim_tui.engine")


async def recover_orphans(
    parts: EngineParts, *, force: bool = False, idems: Sequence[str] | None = None
) -> PassReport:
    """Settle `reserving` rows whose create may have been sent and whose
    holder is gone: adopt by label where the backend can search, else
    apply the OrphanPolicy. `force` also takes held and not-yet-due rows."""
    report = PassReport()
    seen: set[str] = set()
    lookup_one = functools.partial(_lookup_one, parts)
    while not parts.circuit.open and (
        claim := await batch_pass.claimed(
            parts, parts.ledger.claim_orphans, force=force, idems=idems, exclude=seen
        )
    ):
        seen.update(r.idem for r in claim.rows)
        async with batch_pass.hold(parts, claim) as batch:
            found = await batch_pass.each(
                parts, claim.rows, lookup_one, batch, calls_api=parts.backend.supports_lookup
            )
        now = parts.clock.now()
        looked_up = parts.backend.supports_lookup or parts.config.webhooks
        todo = [
            transitions.settle_orphan(
                row, out, parts.config, now, force=force, looked_up=looked_up, via=via
            )
            for row, (out, via) in found
        ]
        await batch_pass.apply(parts, todo, report)
    if parts.config.webhooks and not force and not parts.circuit.open:
        named = await inbox.held_named(parts.ledger)
        if named:
            # Held before their event came: the event is the proof an
            # operator would look for, so they are adopted now.
            report.merge(await recover_orphans(parts, force=True, idems=named))
    return parts.noted(report)


async def _lookup_one(
    parts: EngineParts, row: Row
) -> tuple[RemoteInteraction | Exception | None, str]:
    """The interaction an orphan's create made, if it can be found: one an
    inbox event named the job by, confirmed (webhooks), else the backend's
    label lookup. Only one labelled with the row's current attempt: the
    job's key also names the interactions of its earlier attempts (the
    failed one an operator retried) and of a pruned job whose key a new
    job took; adopting one of those is a wrong result or a paid one never
    collected. A row whose attempt has no send time (written
    before migration 3) has no attempt label to look for: nothing is
    found, and the orphan policy applies."""
    attempt = row.attempt_tag
    if attempt is None:
        return None, "label"
    if parts.config.webhooks:
        try:
            found = await _confirmed_event(parts, row)
        except Exception as exc:  # rule 7: the row's outcome (looked at again later)
            return exc, "webhook inbox"
        if found is not None:
            return found
    if not parts.backend.supports_lookup:
        return None, "label"
    out = await batch_pass.outcome(parts.backend.find_by_label(row.idem, attempt))
    parts.circuit.record(out)
    if isinstance(out, RemoteInteraction) and not _made_for(out, row.idem, attempt):
        log.warning(
            "%s: the label lookup found %s, not made for attempt %s: not adopted",
            row.idem,
            out.id,
            attempt,
        )
        return None, "label"
    return out, "label"


async def _confirmed_event(parts: EngineParts, row: Row) -> tuple[RemoteInteraction, str] | None:
    """The newest interaction an event named this job by that the API
    confirms: it exists and is labelled for this job and its current
    attempt. A 404 or another job's or attempt's label skips the event
    (replayed, mis-routed, stale, or gone since); any other failure is
    raised (the orphan is looked at again later)."""
    for event in await inbox.named(parts.ledger, row.idem):
        assert event.interaction is not None
        out = await batch_pass.outcome(parts.backend.get(event.interaction))
        parts.circuit.record(out)
        if isinstance(out, InteractionGoneError):
            continue
        if isinstance(out, Exception):
            raise out
        if _made_for(out, row.idem, row.attempt_tag):
            return out, f"webhook event {event.webhook_id}"
        log.warning(
            "inbox event %s names %s for job %s attempt %s, but the API labels it %r: skipped",
            event.webhook_id,
            event.interaction,
            row.idem,
            row.attempt_tag,
            (out.raw or {}).get("labels"),
        )
    return None


def _made_for(found: RemoteInteraction, idem: str, attempt: str | None) -> bool:
    """Whether the API labels `found` as made for this job's attempt."""
    labels = (found.raw or {}).get("labels") or {}
    return bool(labels.get("idem") == idem and attempt and labelled_attempt(found.raw) == attempt)
