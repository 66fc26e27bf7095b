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

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.core.models import (
    Actor,
    GonePolicy,
    JobSpec,
    OrphanPolicy,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
)
from reclaim_tui.core.outputs import action_summary
from reclaim_tui.errors import BackendError, InteractionGoneError, NotCreatedError

__all__ = [
    "EngineConfig",
    "Overdue",
    "Transition",
    "after_create",
    "after_poll",
    "delivered",
    "describe",
    "late_create_adopted",
    "overdue",
    "settle_orphan",
    "sink_failed",
]


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine paces its work: concurrency, leases, attempts, backoff, polls."""

    concurrency: int = 16
    batch_size: int = 500
    lease_seconds: float = 120.0
    max_attempts: int = 5
    backoff_base: float = 2.0
    backoff_cap: float = 300.0
    first_poll: float = 2.0
    poll_cap: float = 300.0
    max_read_errors: int = 100
    orphan_policy: OrphanPolicy = OrphanPolicy.RESUBMIT
    actor: Actor = Actor.TICK
    #: how long after an attempt was sent a label lookup that finds nothing is
    #: trusted: the request timeout plus a grace period (a create can land
    #: after its client gave up on it).
    lookup_window: float = 60.0
    #: the longest wait between retries after failures outside the job
    retry_cap: float = 6 * 3600.0
    #: consecutive failures outside the job after which a pass stops calling the API
    circuit_threshold: int = 5
    #: seconds a submitted model job may run before it is cancelled (None: no limit)
    deadline_model: float | None = None
    #: the same for agent jobs (Deep Research runs for minutes to tens of minutes)
    deadline_agent: float | None = 4 * 3600.0
    #: what a 404 for a row that has an interaction does (`--on-gone`)
    on_gone: GonePolicy = GonePolicy.RESUBMIT

    def deadline(self, job: JobSpec) -> float | None:
        """The job's own deadline, else the default for its kind."""
        if job.deadline is not None:
            return job.deadline
        return self.deadline_agent if job.agent else self.deadline_model

    def retry_delay(self, n: int, idem: str) -> float:
        """Wait before the n-th retry after a failure outside the job: Sidekiq's
        schedule, n⁴ + 15 s plus a jitter of up to 9·(n+1) s (from the key, so
        rows spread out and a test can predict it), capped at `retry_cap`:
        16 s, 31 s, 96 s, 4.5 min, 11 min … 2.8 h at the 10th, then the cap."""
        jitter = (int(hashlib.sha256(idem.encode()).hexdigest()[:4], 16) % 10) * (n + 1)
        return float(min(self.retry_cap, n**4 + 15 + jitter))

    def outside_wait(self, n: int, idem: str, retry_after: float | None) -> float:
        """The retry delay, or the API's Retry-After when that is longer."""
        return max(retry_after or 0.0, self.retry_delay(n, idem))

    def backoff(self, n: int) -> float:
        """Delay before the n-th retry (n ≥ 1): exponential, capped."""
        return float(min(self.backoff_cap, self.backoff_base * 2 ** max(0, n - 1)))

    def next_poll(self, submitted_at: float, polls: int, now: float) -> float:
        """When to poll next, after `polls` polls of a job submitted at `submitted_at`.

        Polls sit on a fixed grid of ages — first_poll · 2^k (2, 4, 8, 16 … s) —
        rather than "now + age", so a late tick does not push every later poll
        further out: a job of duration d is seen done by age 2·d at most, after
        ⌈log2(d / first_poll)⌉ + 1 polls. Past the cap, polls come every poll_cap.
        """
        if self.first_poll <= 0:
            return now
        age = now - submitted_at
        exponent = polls
        if age >= self.first_poll * 2.0 ** min(exponent, 40):
            # That grid point has passed (a late tick): take the first one
            # after now, never "due at once", or a late row is polled twice.
            exponent = math.floor(math.log2(age / self.first_poll)) + 1
        target = submitted_at + self.first_poll * 2.0 ** min(exponent, 40)
        return min(target, now + self.poll_cap)


@dataclass(frozen=True, slots=True)
class Transition:
    """One compare-and-set: applied only if the row still has `expect` status
    and is held by the writer. `changes` are column → value; `release` drops
    the lease in the same statement; `result` is stored in the same
    transaction (rule 4: result before side effect)."""

    idem: str
    expect: Status
    to: Status
    note: str
    changes: dict[str, Any] = field(default_factory=dict)
    result: RemoteInteraction | None = None
    release: bool = True
    #: the PassReport counter this transition adds to — only once it applied.
    tally: str | None = None
    #: an error to report for this row (recorded whether or not it applied).
    error: str | None = None


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
    return Transition(
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
    """A 404 for an interaction that was created: gone past the API's
    retention (55 days paid, 1 day free tier), or a server-side bug. Never a
    silent resubmission: resent as a possible duplicate spend, or held for an
    operator (`--on-gone hold`)."""
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
            {**base, "last_error": gone},
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
            "next_at": now,
            "last_error": gone,
            "duplicates": row.duplicates + 1,
        },
        tally="gone",
        error=message,
    )


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
    if out.state == RemoteState.COMPLETED:
        return Transition(
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
        note = f"unknown API status {out.api_status!r}; still polling"
        changes["last_error"] = note
        return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes)
    if row.last_error:
        changes["last_error"] = None
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
        "last_error": f"requires action: {asked}",
        "next_at": now + config.poll_cap,
    }
    note = "" if row.held else f"requires action, held for an operator: {asked}"
    return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes, result=out)


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


# -- done → … (after the sink) -----------------------------------------------------------
def delivered(idem: str, now: float) -> Transition:
    """The sink ran to the end: the side effect is done."""
    return Transition(
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
) -> Transition:
    """What recovery does with an orphan, given what a label lookup found.

    Not found is no proof while the attempt's request may still land: with a
    lookup (`looked_up`), the orphan waits until `lookup_window` after it was
    sent and is looked up again. Every resend after an unknown outcome is
    recorded as a possible duplicate spend.
    """
    if isinstance(found, BaseException):
        return _orphan_lookup_failed(row, found, config, now)
    if found is not None:
        return _adopted(row, found.id, f"orphan adopted: {found.id} found by label", now)
    trusted_at = (row.sent_at or 0.0) + config.lookup_window
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
        Status.RESERVING,
        Status.RESERVING,
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
        f"orphan: attempt {row.attempts} not found by label yet; its create may still"
        f" land, looking again in {trusted_at - now:.0f}s",
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
