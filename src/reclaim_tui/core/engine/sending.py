"""The send pass: create an interaction for every due `reserving` row.

Each row's attempt is committed just before its own create is sent, and its
handle as soon as the answer arrives (a group commit across the answers
that arrive together, batching.py). A create answered after this process
lost the row's lease is settled here too: taken back where the row is still
an orphan, else cancelled only when provably a duplicate.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import logging
from collections.abc import Sequence
from typing import Any

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import batch_pass, transitions
from reclaim_tui.core.engine.batching import GroupCommit, Written
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.transitions import describe
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.models import (
    ATTEMPT_LABEL,
    JobSpec,
    PassReport,
    RemoteInteraction,
    Row,
    Status,
    Transition,
)
from reclaim_tui.errors import BackendError, LedgerError

__all__ = ["send_reserved"]

log = logging.getLogger("reclaim_tui.engine")

#: Batches' worth of a submit's keys left that each of its claims names first.
WINDOW_BATCHES = 4


async def send_reserved(parts: EngineParts, idems: Sequence[str] | None = None) -> PassReport:
    """Create an interaction for every due `reserving` row not in flight (of
    `idems` only, when given: a submit sends its own jobs, nothing else).

    Each row's attempt is committed just before its own create is sent and
    its handle as soon as the answer arrives (group commit across answers
    that arrive together): after a kill, only the creates in flight
    (≤ concurrency) have an unknown outcome, and a row whose create was
    never sent is left as it was.
    """
    report = PassReport()
    # The submit's keys not yet sent: a key whose row left `reserving` is
    # dropped, so each claim names only what is left rather than every key
    # of the submit again (a claim per batch over all of them grows with
    # the square of the submit's size).
    scope = None if idems is None else _Scope(idems)
    claim = None
    if not parts.circuit.open:
        claim = await _claim_left(parts, scope)
    while claim is not None:
        # The batch's last write (its last row's handle) takes the next batch.
        rider = functools.partial(_ride, parts, scope)
        commit = GroupCommit(parts.ledger, parts.owner, parts.config.actor, rider=rider)
        late: list[tuple[Row, str]] = []
        created: list[str] = []
        send = functools.partial(
            _send_one,
            parts,
            commit=commit,
            late=late,
            created=created,
            report=report,
            unfinished=[len(claim.rows)],
            scope=scope,
        )
        try:
            async with batch_pass.hold(parts, claim) as batch:
                outcomes = await batch_pass.each(parts, claim.rows, send, batch)
            # `_send_one` keeps the API's failures in their rows: what comes
            # out of it is the ledger (or this program) failing a row's step.
            failed = [(row, out) for row, out in outcomes if isinstance(out, Exception)]
            await _settle_late_creates(parts, late, report)
            if parts.config.webhooks and created:
                # A fast job's event can beat its create's answer: poll those now.
                report.counts["woken"] += await inbox.wake(parts.ledger, created, parts.clock.now())
            if failed:
                raise _pass_failed(failed, parts.noted(report))
        except BaseException:
            await _give_back(parts, commit.next_claim)
            raise
        claim = await _next_batch(parts, commit.next_claim, scope)
    return parts.noted(report)


class _Scope:
    """The keys a submit's send pass may still claim, in the submit's order."""

    __slots__ = ("left",)

    def __init__(self, idems: Sequence[str]) -> None:
        self.left: dict[str, None] = dict.fromkeys(idems)

    def sent(self, t: Transition) -> None:
        """`t` applied: its key is no longer the pass's once it left `reserving`."""
        if t.to is not Status.RESERVING:
            self.left.pop(t.idem, None)


def _keys(scope: _Scope | None, window: int | None = None) -> dict[str, Sequence[str]]:
    """A claim's `idems` argument: none (any due row), or the keys left (the
    first `window` of them when given)."""
    if scope is None:
        return {}
    return {"idems": list(itertools.islice(scope.left, window))}


def _window(parts: EngineParts) -> int:
    """Keys left a claim names first: a few batches' worth, so a claim's
    statement stays the same size however large the submit."""
    return WINDOW_BATCHES * parts.flight()


async def _claim_left(parts: EngineParts, scope: _Scope | None) -> Claim | None:
    """The next batch of the keys left: of the first few, or, when none of
    those can be taken now (held elsewhere, a retry due later), of all."""
    claim = await batch_pass.claimed(
        parts, parts.ledger.claim_sendable, limit=parts.flight(), **_keys(scope, _window(parts))
    )
    if claim is None and scope is not None and len(scope.left) > _window(parts):
        claim = await batch_pass.claimed(
            parts, parts.ledger.claim_sendable, limit=parts.flight(), **_keys(scope)
        )
    return claim


async def _ride(
    parts: EngineParts,
    scope: _Scope | None,
    sending: Sequence[str],
    todo: Any,
) -> tuple[dict[str, Row], list[str], Claim]:
    return await parts.ledger.write_and_claim_sendable(
        parts.owner,
        parts.config.actor,
        sending=sending,
        transitions=todo,
        limit=0 if parts.circuit.open else parts.flight(),
        lease_seconds=parts.config.lease_seconds,
        **_keys(scope, _window(parts)),
    )


async def _next_batch(
    parts: EngineParts, taken: Claim | None, scope: _Scope | None
) -> Claim | None:
    """The batch the last write took (None when it took none: claimed now)."""
    if taken is None or (not taken.rows and scope is not None and scope.left):
        # None taken with the write: claim now (a submit's keys left
        # beyond the window the write's claim named are looked at too).
        if taken is not None:
            await _give_back(parts, taken)
        if parts.circuit.open:
            return None
        return await _claim_left(parts, scope)
    if parts.circuit.open or not taken.rows:
        await _give_back(parts, taken)
        return None
    warm = getattr(parts.backend, "warm", None)
    if warm is not None:
        await warm()
    return taken


async def _give_back(parts: EngineParts, taken: Claim | None) -> None:
    """Release a batch taken with the last write that will not be worked on."""
    if taken is not None and taken.rows:
        await parts.ledger.release(parts.owner, [r.idem for r in taken.rows])


async def _send_one(
    parts: EngineParts,
    row: Row,
    *,
    commit: GroupCommit,
    late: list[tuple[Row, str]],
    created: list[str],
    report: PassReport,
    unfinished: list[int],
    scope: _Scope | None,
) -> None:
    """One row's send, in one coroutine (a batch runs one a row). Its last
    write says whether it is the batch's last: `unfinished` counts the
    batch's rows not finished yet, and a row that ends without that write
    (its lease lost, a failure) is counted off at its end."""
    counted = False
    try:
        # The spec's fields: its JobSpec is made once, with the attempt's
        # label, when the attempt is known.
        fields = json.loads(row.spec)
        config = None
        if (key := fields.get("previous")) is not None:
            # A chain: sent only once the job it continues is done, as a
            # follow-up of that job's interaction.
            previous = await parts.ledger.get(key)
            hold = transitions.before_chain(row, previous, parts.config, parts.clock.now())
            if hold is not None:
                counted = True
                written = await _committing(commit, hold, report, last=_finishing(unfinished))
                _counted(hold, written, report)
                return
            assert previous is not None and previous.handle is not None
            config = {**(fields.get("config") or {}), "previous_interaction_id": previous.handle}
        sending = (await commit.mark_sending(row.idem)).marked.get(row.idem)
        if sending is None:
            report.counts["lease_lost"] += 1
            return
        # The create names its attempt too: recovery adopts only an
        # interaction made for the row's current attempt.
        labels = {ATTEMPT_LABEL: sending.attempt_tag or ""}
        job = JobSpec.from_fields(fields, config=config, labels=labels)
        crashpoint("before_create")
        # The call's answer or its error: the row's outcome (rule 7), taken
        # here rather than through batch_pass.outcome, a coroutine more a row.
        out: RemoteInteraction | Exception
        try:
            out = await parts.backend.create(job, sending.idem)
        except Exception as exc:
            out = exc
        parts.circuit.record(out)
        crashpoint("after_create_before_handle")
        t = transitions.after_create(sending, out, parts.config, parts.clock.now())
        handle = t.changes.get("handle")
        counted = True
        written = await _committing(commit, t, report, last=_finishing(unfinished))
        if not _counted(t, written, report):
            if handle:
                late.append((sending, handle))
        else:
            if scope is not None:
                scope.sent(t)
            if handle:
                created.append(handle)
        crashpoint("after_handle_commit")
    finally:
        if not counted:
            unfinished[0] -= 1


def _finishing(unfinished: list[int]) -> bool:
    """Count a row of the batch finished; True when it was the last."""
    unfinished[0] -= 1
    return unfinished[0] == 0


def _committing(
    commit: GroupCommit, t: Transition, report: PassReport, *, last: bool = False
) -> asyncio.Future[Written]:
    """Hand `t` to the group commit (its error reported now): the future to
    await and then give to `_counted`. Two plain calls around the await, not
    a coroutine of their own: every row sent makes this write."""
    if t.error:
        report.error(t.idem, t.error)
    return commit.apply(t, last=last)


def _counted(t: Transition, written: Written, report: PassReport) -> bool:
    """Whether `t` applied in the commit that `written` is, counted in the report."""
    applied = t.idem in written.applied
    if not applied:
        report.counts["lease_lost"] += 1
    elif t.tally:
        report.counts[t.tally] += 1
    return applied


async def _settle_late_creates(
    parts: EngineParts, late: Sequence[tuple[Row, str]], report: PassReport
) -> None:
    """Creates answered after this process lost the row's lease (it was
    paused or slow past the lease). Where the row is still an orphan and
    its lease is free, a fresh claim takes it back and the create becomes
    its handle. Otherwise nothing is written (the lease is gone), and the
    create is cancelled only when the row provably holds another
    interaction (or none will ever be needed): never the one the row holds,
    never one that recovery may still adopt."""
    if not late:
        return
    handles = dict((row.idem, handle) for row, handle in late)
    attempts = {row.idem: row.attempt_tag for row, _ in late}
    claim = await parts.ledger.claim_orphans(
        parts.owner,
        limit=len(handles),
        lease_seconds=parts.config.lease_seconds,
        force=True,
        idems=list(handles),
    )
    now = parts.clock.now()
    # Only while the row is still at the attempt this create was sent
    # for: a later attempt (a resend, a follow-up turn) is not this one's.
    current = [
        r for r in claim.rows if r.status == Status.RESERVING and r.attempt_tag == attempts[r.idem]
    ]
    await parts.ledger.release(parts.owner, [r.idem for r in claim.rows if r not in current])
    adopted = await batch_pass.apply(
        parts,
        [transitions.late_create_adopted(r, handles[r.idem], now) for r in current],
        report,
    )
    for idem, handle in handles.items():
        if idem not in adopted:
            await _record_late_create(parts, idem, handle)


async def _record_late_create(parts: EngineParts, idem: str, handle: str) -> None:
    # A process without the lease writes nothing: the row's new
    # holder already recorded the resend as a possible duplicate. This
    # create is provably ours; it is cancelled only when the row holds
    # another interaction or is settled, and said in our own log.
    try:
        current = await parts.ledger.get(idem)
    except Exception as exc:  # the ledger may be what failed us
        log.warning("%s: late create %s, row unreadable: %s", idem, handle, exc)
        return
    if current is None or current.handle == handle or current.status == Status.RESERVING:
        log.warning("%s: late create %s after the lease was lost; left as is", idem, handle)
        return
    outcome = await _cancel_note(parts, handle)
    log.warning(
        "%s: late create %s after the lease was lost, a duplicate of %s; %s",
        idem,
        handle,
        current.handle or current.status.value,
        outcome,
    )


async def _cancel_note(parts: EngineParts, handle: str) -> str:
    try:
        remote = await parts.backend.cancel(handle)
    except BackendError as exc:
        return f"cancel failed: {describe(exc)}"
    return f"cancel asked: {remote.api_status}"


def _pass_failed(failed: Sequence[tuple[Row, Exception]], report: PassReport) -> Exception:
    """The error that ends a pass whose rows' steps the ledger refused: each
    row named in the report (`report` on the error, for the CLI's document),
    the first error's class kept (a server out of reach is waited for by
    `run`). Never swallowed: a pass that did not do what it claimed exits
    non-zero (`sent=2`, `errors: []`, exit 0, 3 rows stranded)."""
    for row, exc in failed:
        report.error(row.idem, f"not sent, the ledger failed: {exc}")
    first = failed[0][1]
    if not isinstance(first, LedgerError):
        return first
    error = type(first)(f"{first} ({len(failed)} row(s) of the pass not sent or not recorded)")
    error.report = report
    return error
