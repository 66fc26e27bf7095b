"""A cancel the API has not confirmed yet ("cancel pending").

An operator's cancel is written at once (the row is `cancelled` here), but
when the API's cancel fails — unreachable, 5xx, rate limited — the
interaction may keep running and billing. Such a row stays `cancelled` with
`held = 1` and `last_error` starting with "cancel pending: …"; its `next_at`
is when to ask again. The engine's passes (`Engine.confirm_cancels`,
confirming.py) claim the due ones and ask the API again, with the ledger's
usual back-off, until it confirms (the row's `held` goes back to 0; the
history says "remote cancel confirmed"). `held` on a cancelled row means
nothing else: an operator's cancel clears it, and nothing else cancels a
held row.

No schema change: `held`, `next_at` and `last_error` are the row's own
columns, and the claim uses the (status, next_at) index.
"""

from __future__ import annotations

from typing import Any

from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.engine.transitions import Transition, describe
from reclaim_tui.core.models import RemoteInteraction, RemoteState, Row, Status
from reclaim_tui.core.row_notes import PENDING, PENDING_SQL, is_pending
from reclaim_tui.errors import BackendError, InteractionGoneError, PermanentReadError

__all__ = [
    "PENDING",
    "PENDING_SQL",
    "after_remote_cancel",
    "is_pending",
    "pending_changes",
    "unconfirmed",
]

#: What the API may still be doing when its cancel failed.
_RUNNING = (RemoteState.PENDING, RemoteState.ACTION, RemoteState.UNKNOWN)


def unconfirmed(failure: BackendError, remote: RemoteInteraction | None) -> bool:
    """After a failed remote cancel: may the interaction still be running?
    (A 404 has nothing left to cancel; a look that found it finished neither;
    a permanent refusal — the API will not cancel a finished interaction —
    would be answered the same way however often it is asked, and a row
    kept "cancel pending" by it could never be retried.)"""
    if isinstance(failure, InteractionGoneError | PermanentReadError):
        return False
    return remote is None or remote.state in _RUNNING


def pending_changes(message: str, streak: int, config: EngineConfig, now: float) -> dict[str, Any]:
    """The row's columns while its remote cancel waits to be asked again."""
    return {
        "held": 1,
        "last_error": f"{PENDING}: {message}",
        "error_streak": streak,
        "next_at": now + config.backoff(streak),
    }


def after_remote_cancel(
    row: Row, out: RemoteInteraction | BaseException, config: EngineConfig, now: float
) -> Transition:
    """The edge a retried remote cancel takes (the row stays `cancelled`)."""
    handle = row.handle or "?"
    done: dict[str, Any] = {"held": 0, "last_error": None, "error_streak": 0}
    if isinstance(out, RemoteInteraction) and out.state == RemoteState.COMPLETED:
        # It completed before the cancel reached it: a paid result is kept.
        note = f"{handle} completed before the cancel reached it: result kept, collecting it"
        changes = {**done, "next_at": now}
        return Transition(row.idem, Status.CANCELLED, Status.SUBMITTED, note, changes)
    if isinstance(out, RemoteInteraction):
        note = f"remote cancel confirmed: {handle} is {out.api_status}"
        return Transition(row.idem, Status.CANCELLED, Status.CANCELLED, note, done)
    message = describe(out)
    if isinstance(out, InteractionGoneError):
        note = f"remote cancel confirmed: {handle} is gone (404), nothing left to run"
        return Transition(row.idem, Status.CANCELLED, Status.CANCELLED, note, done)
    if isinstance(out, PermanentReadError):
        # Refused for good: asking again would be refused again. Said on the row.
        changes = {**done, "last_error": f"remote cancel of {handle} refused: {message}"}
        note = f"remote cancel of {handle} refused, not asked again: {message}"
        return Transition(
            row.idem, Status.CANCELLED, Status.CANCELLED, note, changes, error=message
        )
    streak = row.error_streak + 1
    changes = pending_changes(f"remote cancel of {handle} failed: {message}", streak, config, now)
    note = f"remote cancel of {handle} failed again ({streak}): {message}"
    return Transition(row.idem, Status.CANCELLED, Status.CANCELLED, note, changes, error=message)
