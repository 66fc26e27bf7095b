"""The follow-up turn: an operator's answer to an interaction that requires
action (a question), or to a research plan (approve it; `refine`: ask for a
new plan, planning.py). A follow-up interaction with
`previous_interaction_id` becomes the row's handle.

The follow-up turn is a create like a first one (rule 3): its send is
committed on the row before the call (in flight, `sent_at`: its own attempt
label), so a lost answer leaves an orphan of the turn that recovery settles
— adopted by label or event, else the orphan policy — and answering again
meanwhile sends nothing.
"""

from __future__ import annotations

from dataclasses import replace

from reclaim_tui.core.engine.operator_rows import as_this_process, refused, require, update
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.planning import PLAN_READY, follow_up_config
from reclaim_tui.core.engine.transitions import describe
from reclaim_tui.core.models import ATTEMPT_LABEL, Actor, Row, Status
from reclaim_tui.core.row_notes import ASKS
from reclaim_tui.errors import BackendError, NotCreatedError, OperatorError

__all__ = ["answer"]


async def answer(
    parts: EngineParts, idem: str, text: str, *, actor: Actor, refine: bool = False
) -> Row:
    """Answer the interaction row `idem` waits on with `text`: the follow-up
    turn's interaction becomes the row's handle (see the module's doc)."""
    text = text.strip()
    if not text:
        raise OperatorError("an answer must not be empty")
    before = await require(parts, idem)
    if before.status == Status.SUBMITTED and before.inflight:
        raise OperatorError(_turn_unknown(before))
    if before.status != Status.SUBMITTED or not before.held or not before.handle:
        raise OperatorError(f"{idem} is not waiting for an answer ({before.status})")
    plan = (before.last_error or "").startswith(PLAN_READY)
    if not plan and not (before.last_error or "").startswith(ASKS):
        raise OperatorError(f"{idem} is not waiting for an answer (held: {before.last_error})")
    job = before.job
    previous = before.handle
    now = parts.clock.now()
    marked = await as_this_process(
        parts,
        idem,
        (Status.SUBMITTED,),
        Status.SUBMITTED,
        actor,
        f"answering {previous}: sending a follow-up interaction",
        # Due for recovery once the window in which its create may land is over.
        {"inflight": 1, "sent_at": now, "next_at": now + parts.config.orphan_window()},
        inflight=False,
    )
    if marked is None:
        current = await require(parts, idem)
        if current.status == Status.SUBMITTED and current.inflight:
            raise OperatorError(_turn_unknown(current))
        raise await refused(parts, idem, (Status.SUBMITTED,))
    if marked.handle != previous:  # answered by someone else meanwhile
        note = f"answer to {previous} withdrawn: {marked.handle} is the row's interaction now"
        await update(
            parts, idem, (Status.SUBMITTED,), Status.SUBMITTED, actor, note, {"inflight": 0}
        )
        raise OperatorError(f"{idem} was answered meanwhile ({marked.handle}); not sent")
    labels = {**job.labels, ATTEMPT_LABEL: marked.attempt_tag or ""}
    config = follow_up_config(job.config, previous, plan=plan, refine=refine)
    follow = replace(job, input=text, labels=labels, config=config)
    try:
        remote = await parts.backend.create(follow, idem)
    except NotCreatedError as exc:
        # Provably not created: the turn is given back, answerable again.
        note = f"follow-up to {previous} not created: {describe(exc)}"
        await update(
            parts, idem, (Status.SUBMITTED,), Status.SUBMITTED, actor, note, {"inflight": 0}
        )
        raise OperatorError(f"the follow-up was not sent: {describe(exc)}") from exc
    except BackendError as exc:
        note = f"follow-up to {previous}: outcome unknown ({describe(exc)})"
        await parts.ledger.add_event(idem, actor, note, Status.SUBMITTED.value)
        raise OperatorError(
            f"{idem}: the follow-up to {previous} may have been created, its outcome is"
            f" unknown ({describe(exc)}); recorded. Do not answer again: `reclaim-tui"
            f" recover {idem}` settles it (adopts the follow-up by its label or event,"
            " or applies the orphan policy)"
        ) from exc
    changes = {
        "handle": remote.id,
        "inflight": 0,
        "held": 0,
        "polls": 0,
        "submitted_at": now,
        "next_at": now,
        "last_error": None,
    }
    note = f"operator answered {previous}; follow-up {remote.id}"
    return await update(parts, idem, (Status.SUBMITTED,), Status.SUBMITTED, actor, note, changes)


def _turn_unknown(row: Row) -> str:
    return (
        f"{row.idem}: the follow-up to {row.handle} was sent and its outcome is unknown;"
        " not sending another — `reclaim-tui recover"
        f" {row.idem}` settles it (adopts it by label or event, or applies the orphan"
        " policy; `recover --force` at once)"
    )
