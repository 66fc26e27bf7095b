"""The edges out of `submitted`: what a poll's outcome does to a row — still
running, completed, failed, asking for action, past its deadline, gone, or
an error reading it (docs/design.md §2, and the status table of docs/jobs-and-sinks.md).
Pure functions, like transitions.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reclaim_tui.core.engine.planning import is_plan
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.engine.transitions import Transition, describe
from reclaim_tui.core.models import (
    GonePolicy,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
    make_transition,
)
from reclaim_tui.core.outputs import action_summary
from reclaim_tui.core.row_notes import ASKS, NOT_FOUND, PLAN_READY, UNKNOWN_STATUS
from reclaim_tui.errors import BackendError, InteractionGoneError

__all__ = [
    "ASKS",
    "NOT_FOUND",
    "UNKNOWN_STATUS",
    "Overdue",
    "after_poll",
    "not_found_since",
    "overdue",
]

_ISO = "%Y-%m-%dT%H:%M:%SZ"


def not_found_since(row: Row) -> float | None:
    """When the row's current streak of 404s began (None: it is not in one)."""
    text = row.last_error or ""
    if not text.startswith(NOT_FOUND):
        return None
    stamp = text[len(NOT_FOUND) : len(NOT_FOUND) + len("2026-01-01T00:00:00Z")]
    try:
        when = datetime.strptime(stamp, _ISO)
    except ValueError:
        return None
    return when.replace(tzinfo=UTC).timestamp()


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime(_ISO)


# -- submitted → … (after a poll) --------------------------------------------------------
def after_poll(
    row: Row, out: RemoteInteraction | Overdue | BaseException, config: EngineConfig, now: float
) -> Transition:
    """The edge a poll's outcome takes from `submitted`."""
    if isinstance(out, RemoteInteraction):
        return _after_state(row, out, config, now)
    if isinstance(out, Overdue):
        return _after_overdue(row, out, config, now)
    if isinstance(out, InteractionGoneError):
        return _gone(row, describe(out), config, now)
    if isinstance(out, BackendError) and out.cause is not None:
        return _read_deferred(row, out, describe(out), config, now)
    return _read_error(row, describe(out), config, now)


def _read_deferred(
    row: Row, out: BackendError, message: str, config: EngineConfig, now: float
) -> Transition:
    """A poll that failed for a cause outside the job: never counted toward
    giving up on the row; polled again on the outside schedule."""
    streak = row.outside_streak + 1
    wait = config.outside_wait(streak, row.idem, out.retry_after)
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.SUBMITTED,
        f"poll refused ({out.cause}): {message}; next poll in {wait:.0f}s",
        {
            "polls": row.polls + 1,
            "outside_streak": streak,
            "last_error": message,
            "next_at": now + wait,
        },
        tally="deferred",
        error=message,
    )


def _gone(row: Row, message: str, config: EngineConfig, now: float) -> Transition:
    """A 404 for an interaction that was created. Inside the API's retention
    it is a hiccup until shown otherwise (a server-side bug once answered 404
    for fresh interactions for two days): polled again with backoff for
    `gone_grace` from the first 404, then held for an operator and still
    polled rarely, so a result that comes back is collected. Past retention
    (55 days paid, 1 day free tier) it is gone: never a silent resubmission,
    resent as a possible duplicate spend, or held (`--on-gone hold`)."""
    age = now - (row.submitted_at if row.submitted_at is not None else row.created_at)
    if age < config.retention:
        return _not_found(row, message, config, now)
    base = {"polls": row.polls + 1}
    gone = f"interaction {row.handle} gone (404)"
    if config.on_gone == GonePolicy.HOLD:
        changes = {**base, "handle": None, "inflight": 1, "held": 1, "last_error": gone}
        note = f"{gone} before its result was stored; held for an operator (--on-gone hold)"
        return Transition(
            row.idem, Status.SUBMITTED, Status.RESERVING, note, changes, tally="held", error=message
        )
    if row.attempts >= config.max_attempts:
        return Transition(
            row.idem,
            Status.SUBMITTED,
            Status.FAILED,
            f"{gone} and attempts exhausted",
            {**base, "held": 0, "last_error": gone},
            tally="failed",
            error=message,
        )
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.RESERVING,
        f"{gone} before its result was stored; resubmitting — possible duplicate spend",
        {
            **base,
            "handle": None,
            "inflight": 0,
            "held": 0,
            "next_at": now,
            "last_error": gone,
            "duplicates": row.duplicates + 1,
        },
        tally="gone",
        error=message,
    )


def _not_found(row: Row, message: str, config: EngineConfig, now: float) -> Transition:
    """A 404 inside retention: polled again (backoff), held past the grace."""
    since = not_found_since(row)
    since = now if since is None else since
    streak = row.error_streak + 1
    changes: dict[str, Any] = {
        "polls": row.polls + 1,
        "error_streak": streak,
        "last_error": f"{NOT_FOUND}{_stamp(since)}: {message}",
    }
    if now - since < config.gone_grace:
        changes["next_at"] = now + config.backoff(streak)
        if row.held:
            changes["held"] = 0  # it asked something before; now it answers 404
        note = ""
        if since == now:
            age = _age_text(now - (row.submitted_at or now))
            note = (
                f"interaction {row.handle} answered 404 {age}"
                f" after its create, inside the API's retention: not proof of loss; polling"
                f" again for up to {_age_text(config.gone_grace)} (--gone-grace)"
            )
        return Transition(
            row.idem,
            Status.SUBMITTED,
            Status.SUBMITTED,
            note,
            changes,
            tally="not_found",
            error=message,
        )
    changes.update({"held": 1, "next_at": now + config.poll_cap})
    note = ""
    if not row.held:
        note = (
            f"interaction {row.handle} still answers 404 after {_age_text(now - since)}"
            f" (--gone-grace): held for an operator, still polled every"
            f" {_age_text(config.poll_cap)}; `cancel` then `retry` resends it (possible"
            " duplicate spend)"
        )
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.SUBMITTED,
        note,
        changes,
        tally="held" if note else None,
        error=message,
    )


def _age_text(seconds: float) -> str:
    """A short duration: 45s, 12min, 6h, 2.5d."""
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}min"
    if seconds < 172800:
        return f"{seconds / 3600:.3g}h"
    return f"{seconds / 86400:.3g}d"


def _read_error(row: Row, message: str, config: EngineConfig, now: float) -> Transition:
    base = {"polls": row.polls + 1}
    streak = row.error_streak + 1
    if streak >= config.max_read_errors:
        return Transition(
            row.idem,
            Status.SUBMITTED,
            Status.FAILED,
            f"gave up after {streak} read errors: {message}",
            {**base, "error_streak": streak, "last_error": message},
            tally="failed",
            error=message,
        )
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.SUBMITTED,
        f"poll error: {message}",
        {
            **base,
            "error_streak": streak,
            "last_error": message,
            "next_at": now + config.backoff(streak),
        },
        error=message,
    )


def _after_state(row: Row, out: RemoteInteraction, config: EngineConfig, now: float) -> Transition:
    base: dict[str, Any] = {"polls": row.polls + 1}
    if out.state == RemoteState.COMPLETED and is_plan(out.raw):
        return _plan_ready(row, out, config, now)
    if out.state == RemoteState.COMPLETED:
        return make_transition(  # every job completed takes this edge
            row.idem,
            Status.SUBMITTED,
            Status.DONE,
            f"completed; result of {out.id} stored",
            {
                **base,
                "done_at": now,
                "last_error": None,
                "error_streak": 0,
                "outside_streak": 0,
                "next_at": now,
                **({"held": 0} if row.held else {}),
            },
            result=out,
            release=False,
            tally="completed",
        )
    if out.state in (RemoteState.FAILED, RemoteState.CANCELLED):
        to = Status.CANCELLED if out.state == RemoteState.CANCELLED else Status.FAILED
        reason = f"API status {out.api_status}" + (f": {out.error}" if out.error else "")
        # Partial steps and usage may have been paid for: the raw interaction
        # is stored with the row whatever its end.
        changes = {**base, "last_error": reason}
        return Transition(
            row.idem, Status.SUBMITTED, to, reason, changes, result=out, tally=to.value
        )
    if out.state == RemoteState.ACTION:
        return _requires_action(row, out, config, now)
    next_at = config.next_poll(row.submitted_at or now, row.polls + 1, now)
    changes = {**base, "error_streak": 0, "next_at": next_at}
    if row.outside_streak:
        changes["outside_streak"] = 0
    if out.state == RemoteState.UNKNOWN:
        note = f"{UNKNOWN_STATUS}{out.api_status!r}; still polling"
        changes["last_error"] = note
        return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes)
    if row.last_error:
        changes["last_error"] = None
    if row.held:
        changes["held"] = 0  # it was held on 404s and came back
    # Still running: no state change and no event (counted in `polls`).
    return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, "", changes)


def _requires_action(
    row: Row, out: RemoteInteraction, config: EngineConfig, now: float
) -> Transition:
    """The interaction asks someone something: held for an operator (`answer`
    or `cancel`), its question stored with the row, looked at again rarely."""
    asked = action_summary(out.raw)
    changes: dict[str, Any] = {
        "polls": row.polls + 1,
        "held": 1,
        "last_error": f"{ASKS}{asked}",
        "next_at": now + config.poll_cap,
    }
    note = "" if row.held else f"requires action, held for an operator: {asked}"
    return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes, result=out)


def _plan_ready(row: Row, out: RemoteInteraction, config: EngineConfig, now: float) -> Transition:
    """A collaborative-planning turn completed with its plan (core/engine/planning.py):
    not the job's result. Held for an operator (`answer` approves or refines),
    the plan stored with the row; the sink is not run."""
    plan = action_summary(out.raw, limit=2000)
    changes: dict[str, Any] = {
        "polls": row.polls + 1,
        "held": 1,
        "error_streak": 0,
        "last_error": f"{PLAN_READY}{plan}",
        "next_at": now + config.poll_cap,
    }
    note = "" if row.held else f"plan ready ({out.id}), held for an operator: {plan[:200]}"
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.SUBMITTED,
        note,
        changes,
        result=out,
        tally="held" if note else None,
    )


@dataclass(frozen=True, slots=True)
class Overdue:
    """A poll found the job still running past its deadline; `cancelled` is
    the answer to the cancel sent for it (or why that failed)."""

    remote: RemoteInteraction
    deadline: float
    cancelled: RemoteInteraction | BaseException


def overdue(row: Row, remote: RemoteInteraction, config: EngineConfig, now: float) -> float | None:
    """The deadline a still-running job has passed, if it has."""
    if remote.state in (RemoteState.COMPLETED, RemoteState.FAILED, RemoteState.CANCELLED):
        return None
    deadline = config.deadline(row.job)
    if deadline is None or row.submitted_at is None or now - row.submitted_at < deadline:
        return None
    return deadline


def _after_overdue(row: Row, out: Overdue, config: EngineConfig, now: float) -> Transition:
    answer = out.cancelled
    if isinstance(answer, BaseException):
        message = f"deadline of {out.deadline:g}s passed; cancel failed: {describe(answer)}"
        changes = {
            "polls": row.polls + 1,
            "last_error": message,
            "next_at": now + config.backoff(1),
        }
        return Transition(
            row.idem, Status.SUBMITTED, Status.SUBMITTED, message, changes, error=message
        )
    if answer.state == RemoteState.COMPLETED:
        return _after_state(row, answer, config, now)  # it finished in time after all
    reason = (
        f"deadline of {out.deadline:g}s passed: interaction {answer.id} cancelled"
        f" ({answer.api_status}); its partial output is stored"
    )
    changes = {"polls": row.polls + 1, "last_error": reason}
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.CANCELLED,
        reason,
        changes,
        result=answer,
        tally="cancelled",
    )
