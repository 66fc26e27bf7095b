"""Operator actions on single rows: retry, poll now, cancel, adopt, replay by
key, answer (the follow-up turn itself is in follow_up.py).

Each is one compare-and-set on a row nobody live holds (the ledger's
`operator_update`), with the operator's actor in the row's history; a row in
the wrong status, or held by a live process, is refused with an
`OperatorError` that says which.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from reclaim_tui.core.engine import cancelling, delivering, follow_up, operator_rows
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.planning import is_plan_ready
from reclaim_tui.core.engine.transitions import describe
from reclaim_tui.core.models import (
    Actor,
    PassReport,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
)
from reclaim_tui.errors import (
    BackendError,
    InteractionGoneError,
    LedgerConflictError,
    OperatorError,
)

__all__ = ["Operator", "retry_refusal"]


def retry_refusal(row: Row) -> str:
    """Why a row whose remote cancel is pending is not retried."""
    return (
        f"{row.idem}: the API has not confirmed the cancel of {row.handle or 'its interaction'}"
        " (cancel pending), which may still run and bill; a retry now would drop it for a"
        " new create. The next passes ask the API again: retry once the row says the"
        " remote cancel is confirmed"
    )


class Operator:
    """Operator actions over the engine's parts: its ledger, backend, config and owner."""

    def __init__(self, parts: EngineParts) -> None:
        self.parts = parts
        self.ledger = parts.ledger
        self.backend = parts.backend

    async def retry(self, idem: str, *, actor: Actor) -> Row:
        """Send a failed or cancelled job again, with a fresh attempt budget.

        Refused while the row's remote cancel is pending: the row holds one
        interaction, so a retry would drop the old one, never cancelled,
        still running and billing beside the new create."""
        before = await self._require(idem)
        if cancelling.is_pending(before):
            raise OperatorError(retry_refusal(before))
        note = f"operator retry (was {before.status}"
        note += f": {before.last_error})" if before.last_error else ")"
        if before.handle:
            note += f"; previous interaction {before.handle}"
        changes = {
            "attempts": 0,
            "inflight": 0,
            "held": 0,
            "error_streak": 0,
            "handle": None,
            "next_at": self.ledger.clock.now(),
            "last_error": None,
        }
        expect = (Status.FAILED, Status.CANCELLED)
        return await self._update(idem, expect, Status.RESERVING, actor, note, changes)

    async def poll_now(self, idem: str, *, actor: Actor) -> Row:
        """Make an in-flight job due at once: the next pass polls it (Sidekiq's
        "retry now", Oban's "run now"). Nothing is sent here; a job a live
        process holds is refused (its holder is polling it)."""
        row = await self._require(idem)
        if row.status != Status.SUBMITTED or not row.handle:
            raise OperatorError(
                f"{idem} is {row.status}; poll now applies to submitted (in-flight) rows"
            )
        changes: dict[str, Any] = {"next_at": self.ledger.clock.now()}
        note = "operator: poll now (due at once; the next pass polls it)"
        return await self._update(idem, (Status.SUBMITTED,), Status.SUBMITTED, actor, note, changes)

    async def cancel(self, idem: str, *, actor: Actor) -> Row:
        """Cancel a job that has not finished; asks the API to cancel too.
        A row whose research plan waits for an answer is declined instead.

        An orphan (a create whose outcome is unknown) may have an interaction
        running: it is looked up by label and cancelled where the backend can
        search; elsewhere the row records the possible spend.
        """
        before = await self._require(idem)
        if is_plan_ready(before):
            return await self._decline_plan(before, actor)
        if before.status == Status.SUBMITTED and before.handle:
            await self._refuse_if_completed(before, actor)
        orphan = before.status == Status.RESERVING and before.inflight
        # A follow-up turn (`answer`) whose outcome is unknown: the same rule.
        turn = before.status == Status.SUBMITTED and before.inflight
        changes: dict[str, Any] = {"held": 0}
        note = "operator cancel"
        if (orphan or turn) and not self.backend.supports_lookup:
            changes["duplicates"] = before.duplicates + 1
            what = f"the follow-up to {before.handle}" if turn else f"attempt {before.attempts}"
            note += f"; outcome of {what} unknown — possible duplicate spend"
        expect = (Status.RESERVING, Status.SUBMITTED)
        row = await self._update(idem, expect, Status.CANCELLED, actor, note, changes)
        handle = before.handle
        if (orphan or turn) and self.backend.supports_lookup:
            found = await self._find_orphan(idem, before.attempt_tag, actor)
            handle = found or handle
        if handle:
            remote: RemoteInteraction | None = None
            failure: BackendError | None = None
            try:
                remote = await self.backend.cancel(handle)
                remote_note = f"remote {handle} is {remote.api_status}"
            except BackendError as exc:
                failure = exc
                remote_note = f"remote cancel of {handle} failed: {describe(exc)}"
                # The API refuses to cancel a finished interaction (400): look
                # whether that is why, so a completed result is not lost.
                with contextlib.suppress(BackendError):
                    remote = await self.backend.get(handle)
            if remote is not None and remote.state == RemoteState.COMPLETED and before.handle:
                await self.ledger.add_event(idem, actor, remote_note, Status.CANCELLED.value)
                return await self._keep_completed(row, handle, actor)
            if failure is not None and cancelling.unconfirmed(failure, remote):
                # It may still run and bill: "cancel pending", asked again by
                # the engine's passes until the API confirms (core/engine/cancelling.py).
                pending = cancelling.pending_changes(
                    remote_note, 1, self.parts.config, self.ledger.clock.now()
                )
                pending["handle"] = handle  # an orphan's, found by its label
                note = f"{remote_note}; {cancelling.PENDING}: the next passes ask again"
                return await self._update(
                    idem, (Status.CANCELLED,), Status.CANCELLED, actor, note, pending
                )
            await self.ledger.add_event(idem, actor, remote_note, Status.CANCELLED.value)
        return row

    async def _decline_plan(self, row: Row, actor: Actor) -> Row:
        """A research plan the operator does not want: the row ends
        `cancelled`, its history says declined. Nothing is sent: the plan's
        interaction has completed (the API refuses to cancel it), and the
        research runs only in a next turn, which is never sent now."""
        note = (
            f"operator declined the research plan of {row.handle}: the research is not run,"
            " nothing more is paid"
        )
        changes: dict[str, Any] = {"held": 0, "last_error": None}
        return await self._update(
            row.idem, (Status.SUBMITTED,), Status.CANCELLED, actor, note, changes
        )

    async def _refuse_if_completed(self, row: Row, actor: Actor) -> None:
        """A paid result is never thrown away: an interaction that already
        completed is not cancelled; the next pass stores and delivers it."""
        try:
            remote = await self.backend.get(row.handle or "")
        except BackendError:
            return  # cannot tell: cancel as asked (the API's own answer is recorded)
        if remote.state != RemoteState.COMPLETED:
            return
        note = f"cancel refused: {row.handle} had already completed; its result is kept"
        await self._update(
            row.idem,
            (Status.SUBMITTED,),
            Status.SUBMITTED,
            actor,
            note,
            {"next_at": self.ledger.clock.now()},
        )
        raise OperatorError(
            f"{row.idem}: interaction {row.handle} had already completed — not cancelled;"
            " the next tick stores and delivers its result"
        )

    async def _keep_completed(self, row: Row, handle: str, actor: Actor) -> Row:
        # It completed between our look and the cancel reaching the API: take
        # the row back to `submitted` so the next pass stores the result.
        note = f"{handle} completed before the cancel reached it: result kept, collecting it"
        changes: dict[str, Any] = {"next_at": self.ledger.clock.now(), "last_error": None}
        if handle != row.handle:  # the follow-up turn's interaction (found by its label)
            changes.update(handle=handle, inflight=0, held=0, polls=0)
        return await self._update(
            row.idem, (Status.CANCELLED,), Status.SUBMITTED, actor, note, changes
        )

    async def _find_orphan(self, idem: str, attempt: str | None, actor: Actor) -> str | None:
        # Only the current attempt's interaction: an older one of
        # the same key may be another job's result, or already settled.
        if attempt is None:
            return None
        try:
            found = await self.backend.find_by_label(idem, attempt)
        except BackendError as exc:
            note = f"orphan lookup failed: {describe(exc)}"
            await self.ledger.add_event(idem, actor, note, Status.CANCELLED.value)
            return None
        return found.id if found is not None else None

    async def adopt(self, idem: str, interaction_id: str, *, actor: Actor) -> Row:
        """Attach an existing interaction to a `reserving` or `failed` row."""
        interaction_id = interaction_id.strip()
        if not interaction_id or len(interaction_id) > 256 or not interaction_id.isprintable():
            raise OperatorError(f"{interaction_id!r} is not an interaction id")
        await self._require(idem)
        try:
            remote = await self.backend.get(interaction_id)
        except InteractionGoneError as exc:
            raise OperatorError(f"interaction {interaction_id} does not exist (404)") from exc
        except BackendError as exc:
            raise OperatorError(f"cannot verify {interaction_id}: {describe(exc)}") from exc
        label = (remote.raw.get("labels") or {}).get("idem")
        if label is not None and label != idem:
            raise OperatorError(f"interaction {interaction_id} is labelled for job {label}")
        now = self.ledger.clock.now()
        changes = {
            "handle": interaction_id,
            "inflight": 0,
            "held": 0,
            "submitted_at": now,
            "next_at": now,
            "last_error": None,
            "error_streak": 0,
        }
        note = f"operator adopted {interaction_id}"
        expect = (Status.RESERVING, Status.FAILED)
        try:
            return await self._update(idem, expect, Status.SUBMITTED, actor, note, changes)
        except LedgerConflictError as exc:  # jobs.handle is UNIQUE
            raise OperatorError(f"{interaction_id} is already the handle of another job") from exc

    async def answer(self, idem: str, text: str, *, actor: Actor, refine: bool = False) -> Row:
        """Answer an interaction that requires action (a question), or a
        research plan (approve it; `refine`: ask for a new plan): a follow-up
        interaction becomes the row's handle (follow_up.py)."""
        return await follow_up.answer(self.parts, idem, text, actor=actor, refine=refine)

    async def replay(self, idems: Sequence[str] | None = None) -> PassReport:
        """Deliver the stored results of these `done` rows now (all when None),
        whatever their sink backoff says; never calls the API."""
        return await delivering.replay(self.parts, force=True, idems=idems)

    async def _require(self, idem: str) -> Row:
        return await operator_rows.require(self.parts, idem)

    async def _update(
        self,
        idem: str,
        expect: tuple[Status, ...],
        to: Status,
        actor: Actor,
        note: str,
        changes: dict[str, Any],
    ) -> Row:
        return await operator_rows.update(self.parts, idem, expect, to, actor, note, changes)
