"""The state machine: one pure function per edge (docs/design.md §2).

Each function takes the row as the ledger handed it, the outcome of the one
API call or sink run made for it, the engine's configuration and the time,
and returns the `Transition` to write: a compare-and-set from the status the
row was claimed in. Nothing here reads a clock, the ledger or the network,
so every edge is tested by calling it.

    reserving ──created──────────▶ submitted ──completed──▶ done ──delivered──▶ consumed
        │ ▲  not_created (retry)      │ ▲ still running          │ ▲ sink_failed
        │ └─ maybe_created (orphan)   │ └ read error (backoff)   │ └ (backoff)
        ├──── not retryable/exhausted ┼─▶ failed ◀── API failed ──┘
        └── orphan: adopted ──────────┘   gone (404) → reserving (resubmit)
"""

from __future__ import annotations

from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.models import (
    OrphanPolicy,
    RemoteInteraction,
    Row,
    Status,
    Transition,
    make_transition,
)
from reclaim_tui.errors import BackendError, NotCreatedError

# EngineConfig lives in policy.py; re-exported for the callers that import it here.
# The edges out of `submitted` (polls, deadlines, requires_action) are in polling.py.
__all__ = [
    "EngineConfig",
    "Transition",
    "after_create",
    "before_chain",
    "delivered",
    "describe",
    "late_create_adopted",
    "settle_orphan",
    "sink_failed",
]


def describe(exc: BaseException) -> str:
    """One line for a row's `last_error`: the class, the HTTP status, the text."""
    status = getattr(exc, "status", None)
    name = type(exc).__name__
    text = str(exc) or name
    return f"{name}[{status}]: {text}" if status else f"{name}: {text}"


# -- reserving → … (after a create) -------------------------------------------------------
def after_create(
    row: Row, out: RemoteInteraction | BaseException, config: EngineConfig, now: float
) -> Transition:
    """The edge a create's outcome takes from `reserving`."""
    if isinstance(out, RemoteInteraction):
        return _created(row, out, config, now)
    message = describe(out)
    if isinstance(out, NotCreatedError) and out.cause is not None:
        return _deferred(row, out, message, config, now)
    if not isinstance(out, NotCreatedError):
        # MaybeCreatedError, or anything unexpected: the request may have
        # left, so the outcome is unknown and the attempt stays in flight:
        # recovery adopts it by label or applies the orphan policy.
        return _outcome_unknown(row, message, config, now)
    return _not_created(row, out, message, config, now)


def _created(row: Row, out: RemoteInteraction, config: EngineConfig, now: float) -> Transition:
    return make_transition(  # every job sent takes this edge
        row.idem,
        Status.RESERVING,
        Status.SUBMITTED,
        f"created {out.id} (attempt {row.attempts})",
        {
            "handle": out.id,
            "inflight": 0,
            "submitted_at": now,
            "error_streak": 0,
            "outside_streak": 0,
            "next_at": now + config.first_poll,
            "last_error": None,
        },
        tally="sent",
    )


def _outcome_unknown(row: Row, message: str, config: EngineConfig, now: float) -> Transition:
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        f"attempt {row.attempts}: outcome unknown ({message})",
        {"next_at": now + config.backoff(row.attempts), "last_error": message},
        tally="maybe_created",
        error=message,
    )


def _not_created(
    row: Row, out: NotCreatedError, message: str, config: EngineConfig, now: float
) -> Transition:
    """Provably not created: failed for good, or retried after a backoff."""
    if not out.retryable or row.attempts >= config.max_attempts:
        why = "not retryable" if not out.retryable else f"{row.attempts} attempts"
        return Transition(
            row.idem,
            Status.RESERVING,
            Status.FAILED,
            f"create failed ({why}): {message}",
            {"inflight": 0, "last_error": f"create failed ({why}): {message}"},
            tally="failed",
            error=message,
        )
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        f"attempt {row.attempts} not created: {message}; retry later",
        {"inflight": 0, "next_at": now + config.backoff(row.attempts), "last_error": message},
        error=message,
    )


def _deferred(
    row: Row, out: BackendError, message: str, config: EngineConfig, now: float
) -> Transition:
    """A create refused for a cause outside the job (a key the API refused,
    the network, a rate limit): provably not created, so the attempt is given
    back, and the job waits on the outside schedule instead of failing."""
    streak = row.outside_streak + 1
    wait = config.outside_wait(streak, row.idem, out.retry_after)
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        f"attempt {row.attempts} refused ({out.cause}): {message}; not counted against"
        f" the job, next try in {wait:.0f}s",
        {
            "attempts": row.attempts - 1,
            "inflight": 0,
            "outside_streak": streak,
            "next_at": now + wait,
            "last_error": message,
        },
        tally="deferred",
        error=message,
    )


def before_chain(
    row: Row, previous: Row | None, config: EngineConfig, now: float
) -> Transition | None:
    """Whether a job that continues another may be sent: None when that job
    is done (its interaction is the follow-up's previous_interaction_id);
    else the row waits, or fails when that job never can be continued."""
    key = row.job.previous
    if previous is None:
        why = f"previous job {key} is not in the ledger"
        return Transition(
            row.idem, Status.RESERVING, Status.FAILED, why, {"last_error": why}, tally="failed"
        )
    if previous.status in (Status.DONE, Status.CONSUMED) and previous.handle:
        return None
    if previous.status in (Status.FAILED, Status.CANCELLED):
        why = f"previous job {key} ended {previous.status.value}: nothing to continue"
        return Transition(
            row.idem, Status.RESERVING, Status.FAILED, why, {"last_error": why}, tally="failed"
        )
    waiting = f"waiting for previous job {key} ({previous.status.value})"
    note = "" if row.last_error == waiting else waiting  # said once, not every look
    changes = {"last_error": waiting, "next_at": now + min(config.poll_cap, 30.0)}
    return Transition(row.idem, Status.RESERVING, Status.RESERVING, note, changes, tally="waiting")


# -- done → … (after the sink) -----------------------------------------------------------
def delivered(idem: str, now: float) -> Transition:
    """The sink ran to the end: the side effect is done."""
    return make_transition(  # every job delivered takes this edge
        idem,
        Status.DONE,
        Status.CONSUMED,
        "sink delivered",
        {"consumed_at": now, "last_error": None, "error_streak": 0},
        tally="consumed",
    )


def sink_failed(
    idem: str, streak: int, exc: BaseException, config: EngineConfig, now: float
) -> Transition:
    """The sink raised: the row stays `done` and is replayed after a backoff."""
    message = describe(exc)
    streak += 1
    return Transition(
        idem,
        Status.DONE,
        Status.DONE,
        f"sink failed: {message}",
        {"last_error": message, "error_streak": streak, "next_at": now + config.backoff(streak)},
        error=message,
    )


# -- orphans (reserving, create maybe sent) ----------------------------------------------
def settle_orphan(
    row: Row,
    found: RemoteInteraction | BaseException | None,
    config: EngineConfig,
    now: float,
    *,
    force: bool,
    looked_up: bool,
    via: str = "label",
) -> Transition:
    """What recovery does with an orphan, given what a lookup found (by
    label, or a webhook event naming the job: `via`).

    Not found is no proof while the attempt's request may still land (or,
    with webhooks, while its event may still come): with a lookup
    (`looked_up`), the orphan waits until `orphan_window` after it was sent
    and is looked up again. Every resend after an unknown outcome is
    recorded as a possible duplicate spend.
    """
    if row.status == Status.SUBMITTED:
        return _settle_follow_up(row, found, config, now, force=force, looked_up=looked_up, via=via)
    if isinstance(found, BaseException):
        return _orphan_lookup_failed(row, found, config, now)
    if found is not None:
        return _adopted(row, found.id, f"orphan adopted: {found.id} found by {via}", now)
    trusted_at = (row.sent_at or 0.0) + config.orphan_window()
    if looked_up and now < trusted_at and not force:
        return _orphan_waiting(row, trusted_at, now)
    if config.orphan_policy == OrphanPolicy.HOLD and not force:
        return _orphan_held(row)
    if row.attempts >= config.max_attempts and not force:
        return _orphan_exhausted(row)
    return _orphan_resubmitted(row, now, looked_up=looked_up)


def _orphan_lookup_failed(
    row: Row, exc: BaseException, config: EngineConfig, now: float
) -> Transition:
    message = describe(exc)
    return Transition(
        row.idem,
        row.status,
        row.status,
        f"orphan lookup failed: {message}",
        {"last_error": message, "next_at": now + config.backoff(1)},
        error=message,
    )


def _orphan_waiting(row: Row, trusted_at: float, now: float) -> Transition:
    """Not found by label, but the attempt's create may still land."""
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        f"orphan: attempt {row.attempts} not found yet; its create may still"
        f" land (or its event come), looking again in {trusted_at - now:.0f}s",
        {"next_at": trusted_at},
        tally="waiting",
    )


def _orphan_held(row: Row) -> Transition:
    """policy=hold: left for an operator; a row already held changes nothing."""
    if row.held:
        return Transition(row.idem, Status.RESERVING, Status.RESERVING, "", {})
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        "orphan held for an operator (policy=hold)",
        {"held": 1, "last_error": "orphan: outcome of create unknown"},
        tally="held",
    )


def _orphan_exhausted(row: Row) -> Transition:
    why = f"outcome of {row.attempts} attempts unknown; attempts exhausted"
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.FAILED,
        why,
        {"inflight": 0, "held": 0, "last_error": why},
        tally="failed",
    )


def _orphan_resubmitted(row: Row, now: float, *, looked_up: bool) -> Transition:
    seen = "not found by label" if looked_up else "outcome unknown"
    return Transition(
        row.idem,
        Status.RESERVING,
        Status.RESERVING,
        f"orphan: attempt {row.attempts} {seen}; resubmitting — possible duplicate spend",
        {"inflight": 0, "held": 0, "next_at": now, "duplicates": row.duplicates + 1},
        tally="resubmitted",
    )


# -- a follow-up turn (`answer`) whose outcome is unknown -------------------------------
def _settle_follow_up(
    row: Row,
    found: RemoteInteraction | BaseException | None,
    config: EngineConfig,
    now: float,
    *,
    force: bool,
    looked_up: bool,
    via: str,
) -> Transition:
    """An orphan of a follow-up turn: the row is `submitted`, held on the
    interaction that asked (`handle`), with the turn's create in flight.
    The same rules as a first create: adopted where its label or event is
    found; not found is no proof inside the window; then the orphan policy.
    The answer's text is not stored, so "resubmit" cannot resend it: the
    turn is given back to the operator (answerable again), recorded as a
    possible duplicate spend; "hold" leaves it for `recover --force`."""
    if isinstance(found, BaseException):
        return _orphan_lookup_failed(row, found, config, now)
    if found is not None:
        note = f"follow-up adopted: {found.id} found by {via} (answered {row.handle})"
        changes = {
            "handle": found.id,
            "inflight": 0,
            "held": 0,
            "polls": 0,
            "submitted_at": now,
            "next_at": now,
            "last_error": None,
        }
        return Transition(
            row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes, tally="adopted"
        )
    trusted_at = (row.sent_at or 0.0) + config.orphan_window()
    if looked_up and now < trusted_at and not force:
        return Transition(
            row.idem,
            Status.SUBMITTED,
            Status.SUBMITTED,
            f"follow-up of {row.handle} not found yet; its create may still land (or its"
            f" event come), looking again in {trusted_at - now:.0f}s",
            {"next_at": trusted_at},
            tally="waiting",
        )
    if config.orphan_policy == OrphanPolicy.HOLD and not force:
        # Already held (it waits for its answer): looked up again now and
        # then; `recover --force` settles it.
        changes = {"next_at": now + config.poll_cap}
        return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, "", changes)
    seen = "not found by label" if looked_up else "outcome unknown"
    why = f"follow-up of {row.handle} {seen}: answer again (possible duplicate spend)"
    return Transition(
        row.idem,
        Status.SUBMITTED,
        Status.SUBMITTED,
        why,
        {"inflight": 0, "duplicates": row.duplicates + 1, "last_error": why},
        tally="reopened",
    )


def late_create_adopted(row: Row, handle: str, now: float) -> Transition:
    """A create answered after its sender lost the row's lease, taken back by
    that sender with a fresh claim while the row was still an orphan."""
    note = f"late create {handle} of attempt {row.attempts} adopted after the lease was lost"
    return _adopted(row, handle, note, now)


def _adopted(row: Row, handle: str, note: str, now: float) -> Transition:
    changes = {
        "handle": handle,
        "inflight": 0,
        "held": 0,
        "submitted_at": now,
        "next_at": now,
        "last_error": None,
    }
    return Transition(row.idem, Status.RESERVING, Status.SUBMITTED, note, changes, tally="adopted")
