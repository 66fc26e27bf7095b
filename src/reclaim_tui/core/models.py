"""Value types shared by the ledger, the engine, the backends and the clients."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from reclaim_tui.core.frozen_make import maker
from reclaim_tui.core.result_json import LONG, acyclic_encoder, sorted_json

__all__ = [
    "ACTIVE_STATUSES",
    "ATTEMPT_LABEL",
    "MAX_TARGET_CHARS",
    "TERMINAL_STATUSES",
    "TRANSPORTS",
    "Actor",
    "Event",
    "GonePolicy",
    "JobSpec",
    "OrphanPolicy",
    "PassReport",
    "RemoteInteraction",
    "RemoteState",
    "Row",
    "Status",
    "StoredResult",
    "Transition",
    "attempt_tag",
    "labelled_attempt",
    "make_interaction",
    "make_stored_result",
    "make_transition",
]

#: The label (and, with a webhook, the `user_metadata` field `reclaim_attempt`)
#: naming the attempt a create was sent for, next to the job's `idem` label:
#: the label alone names the job, and a job's key outlives its attempts (an
#: operator retry, a prune and a new job under the same key). Recovery adopts
#: only an interaction labelled with the row's *current* attempt.
ATTEMPT_LABEL = "idem_attempt"
#: The longest model or agent name a job may give (an API's names are a few
#: dozen characters: a longer one is a mistake, refused before it is stored).
MAX_TARGET_CHARS = 200
#: The HTTP transports the Gemini backend can send through: the SDK's own
#: httpx2, or httpx-aiohttp's httpx2 client over aiohttp.
TRANSPORTS = ("httpx", "aiohttp")


def attempt_tag(attempts: int, sent_at: float | None) -> str | None:
    """The label value of the attempt sent at `sent_at` as attempt number
    `attempts` (None: no attempt sent yet). The send time makes it unique per
    attempt across retries (attempts start again at 1) and across jobs that
    reuse a pruned key; it is derived from the row, so it needs no column
    and every process computes the same value. Label values are ≤ 63
    characters of lowercase letters, digits, `_` and `-` (DESIGN.md §1)."""
    if sent_at is None:
        return None
    micros = round(sent_at * 1_000_000)
    sign = "m" if micros < 0 else ""
    return f"{attempts}-{sign}{abs(micros)}"


def labelled_attempt(raw: Mapping[str, Any] | None) -> str | None:
    """The attempt an interaction's labels say it was created for (None: not
    labelled with one — created by an older version, or by hand)."""
    labels = (raw or {}).get("labels")
    value = labels.get(ATTEMPT_LABEL) if isinstance(labels, Mapping) else None
    return value if isinstance(value, str) else None


class Status(StrEnum):
    """A ledger row's status (see DESIGN.md §2)."""

    RESERVING = "reserving"
    SUBMITTED = "submitted"
    DONE = "done"
    CONSUMED = "consumed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATUSES = frozenset({Status.CONSUMED, Status.FAILED, Status.CANCELLED})
ACTIVE_STATUSES = frozenset({Status.RESERVING, Status.SUBMITTED, Status.DONE})


class Actor(StrEnum):
    """Who wrote an event: the history names the kind of process behind it."""

    TICK = "tick"  # a cron tick (or any automatic pass run from the CLI)
    CLI = "cli"  # an operator's CLI command
    CONSOLE = "console"  # an operator's action in the console
    CONSOLE_LOOP = "console-loop"  # the console's automatic reclaim loop
    SERVICE = "service"  # `reclaim-tui run`, the long-lived loop
    API = "api"  # a program's call through the Python API (reclaim_tui.api)
    DEMO = "demo"  # the demo's own jobs (seeded, then its trickle): no operator's


class OrphanPolicy(StrEnum):
    """What to do with an orphan nobody can find by label."""

    RESUBMIT = "resubmit"  # send again; recorded as a possible duplicate spend
    HOLD = "hold"  # leave it for an operator (adopt, or recover --force)


class GonePolicy(StrEnum):
    """What a 404 for a row that has an interaction does (`--on-gone`)."""

    RESUBMIT = "resubmit"  # send again, recorded as a possible duplicate spend
    HOLD = "hold"  # leave it for an operator (retry, or recover --force)


class RemoteState(StrEnum):
    """What an API interaction status means to the ledger.

    Every API status maps to one of these, unknown strings included
    (`UNKNOWN`: keep polling, record it, let the poll cap decide).
    """

    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ACTION = "action"  # requires_action: waiting for someone to answer
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What to send: the input, the model (or an agent) and extra create parameters.

    `agent` names an agent (Deep Research) instead of a model: the two are
    exclusive, and an agent job's `model` is "". `config` holds further
    `interactions.create` keyword arguments (`system_instruction`,
    `generation_config`, `agent_config`, …); `labels` are the job's own
    labels, merged with the ledger's; `key` is the caller's own idempotency
    key, if it chose one.
    """

    input: Any
    model: str
    config: Mapping[str, Any] = field(default_factory=dict)
    key: str | None = None
    agent: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    #: seconds the job may run once submitted (None: the engine's default)
    deadline: float | None = None
    #: the key of the job this one continues: sent once that job is done,
    #: with `previous_interaction_id` = that job's interaction
    previous: str | None = None

    @property
    def target(self) -> str:
        """The agent or model the job runs on (what the ledger shows as its model)."""
        return self.agent or self.model

    def to_json(self) -> str:
        """Canonical JSON of what is sent (the key is not part of it). A model
        job without labels keeps the shape earlier versions keyed it by."""
        body: dict[str, Any] = {"input": self.input}
        if self.agent:
            body["agent"] = self.agent
        else:
            body["model"] = self.model
        if self.config:
            body["config"] = dict(self.config)
        if self.labels:
            body["labels"] = dict(self.labels)
        if self.deadline is not None:
            body["deadline"] = self.deadline
        if self.previous is not None:
            body["previous"] = self.previous
        return _CANONICAL.encode(body)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        return cls.from_fields(json.loads(text))

    @classmethod
    def from_fields(
        cls,
        data: Mapping[str, Any],
        *,
        config: Mapping[str, Any] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> JobSpec:
        """The spec of `to_json`'s parsed text; `config` in place of its
        own, `labels` merged over its own (a create's attempt label): a spec
        sent is made once, not read and then copied with its labels."""
        own = data.get("labels") or {}
        return _make_spec(
            input=data["input"],
            model=data.get("model") or "",
            config=(data.get("config") or {}) if config is None else config,
            agent=data.get("agent"),
            labels={**own, **labels} if labels is not None else own,
            deadline=data.get("deadline"),
            previous=data.get("previous"),
        )


#: `JobSpec(...)` without a call per field (core/frozen_make.py):
#: a spec is read back, with its attempt's label, for every row sent.
_make_spec = maker(JobSpec)
#: The encoder of `json.dumps(..., sort_keys=True, ensure_ascii=False,
#: separators=(",", ":"))`, made once: `dumps` with any option builds a new
#: encoder at every call, and this runs for every job submitted.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
#: `json.dumps(raw, sort_keys=True, ensure_ascii=False)` of an answer parsed
#: from JSON, for every result stored (core/result_json.py)
_SORTED = acyclic_encoder(ensure_ascii=False)


#: The SDK's output helpers that repeat a media block of a step.
_MEDIA_HELPERS = frozenset({"output_image", "output_audio", "output_video"})


@dataclass(frozen=True, slots=True)
class RemoteInteraction:
    """The project's view of one API interaction; no SDK type crosses the port."""

    id: str
    state: RemoteState
    api_status: str
    output_text: str | None = None
    usage: Mapping[str, Any] | None = None
    error: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    #: `raw_json()` once made: the ledger's write and the delivery after it
    #: share one text (a large result is not encoded twice)
    _json: str | None = field(default=None, init=False, compare=False, repr=False)

    def raw_json(self) -> str:
        text = self._json
        if text is None:
            # json.dumps(raw, sort_keys=True, ensure_ascii=False); where a long
            # text appears twice (the output helpers repeat a step's), its
            # strings are spliced in rather than copied by the encoder
            if len(self.output_text or "") >= LONG or _MEDIA_HELPERS & self.raw.keys():
                text = sorted_json(self.raw)
            else:
                text = _SORTED(self.raw)
            # a cache, not a field's change: frozen says nothing of it
            object.__setattr__(self, "_json", text)
        return text


#: `RemoteInteraction(...)` without a call per field (core/frozen_make.py):
#: a backend makes one for every create and every poll answered.
make_interaction = maker(RemoteInteraction)


@dataclass(frozen=True, slots=True)
class Row:
    """One `jobs` row, as read from the ledger."""

    idem: str
    spec: str
    model: str
    status: Status
    handle: str | None
    attempts: int
    polls: int
    inflight: bool
    held: bool
    duplicates: int
    error_streak: int
    prev_owner: str | None
    lease_owner: str | None
    lease_until: float
    next_at: float
    last_error: str | None
    created_at: float
    state_since: float
    submitted_at: float | None
    done_at: float | None
    consumed_at: float | None
    updated_at: float
    #: when the current attempt's create was sent (None: not sent yet)
    sent_at: float | None = None
    #: calls for this row failed in a row for causes outside the job
    outside_streak: int = 0

    @property
    def job(self) -> JobSpec:
        return JobSpec.from_json(self.spec)

    def lease_free(self, now: float, dead: Collection[str]) -> bool:
        """Nobody can act on the row: no holder, its lease ran out, or its
        holder is provably dead. (core/ledger/schema.py's `_FREE` SQL is the same rule.)"""
        return self.lease_owner is None or self.lease_until <= now or self.lease_owner in dead

    @property
    def attempt_tag(self) -> str | None:
        """The label of the create most recently sent for this row (its
        current attempt, or the follow-up turn an operator answered)."""
        return attempt_tag(self.attempts, self.sent_at)

    def is_orphan(self, now: float, dead: Collection[str]) -> bool:
        """A `reserving` row whose create may have been sent and that nobody
        can act on, or one held for an operator. (The ledger's `_ORPHAN` SQL
        is the same rule; a test checks that they agree.)"""
        if self.status != Status.RESERVING:
            return False
        return self.held or (self.inflight and self.lease_free(now, dead))


@dataclass(frozen=True, slots=True)
class StoredResult:
    """A result stored in the same transaction that set the row `done`."""

    idem: str
    interaction_id: str
    output_text: str
    usage: Mapping[str, Any] | None
    raw_json: str
    stored_at: float

    @property
    def raw(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.raw_json)
        return value


@dataclass(frozen=True, slots=True)
class Event:
    """One line of a row's append-only timeline."""

    id: int
    at: float
    idem: str
    actor: str
    from_status: str | None
    to_status: str | None
    note: str


@dataclass
class PassReport:
    """What one pass (or a tick of several) did, for logs, the CLI and the console."""

    counts: Counter[str] = field(default_factory=Counter)
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: (cause, message) when the circuit breaker stopped calling the API
    unavailable: tuple[str, str] | None = None

    def error(self, idem: str, message: str) -> None:
        self.counts["errors"] += 1
        if len(self.errors) < 200:
            self.errors.append((idem, message))

    def merge(self, other: PassReport) -> None:
        self.counts.update(other.counts)
        self.errors.extend(other.errors[: max(0, 200 - len(self.errors))])
        self.unavailable = self.unavailable or other.unavailable

    def summary(self) -> str:
        keys = (
            "inserted",
            "sent",
            "adopted",
            "resubmitted",
            "held",
            "polled",
            "not_found",
            "completed",
            "consumed",
            "failed",
            "cancelled",
            "deferred",
            "errors",
        )
        text = " ".join(f"{k}={self.counts[k]}" for k in keys if self.counts[k]) or "idle"
        return f"{text} api_unavailable={self.unavailable[0]}" if self.unavailable else text


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


#: `Transition(...)`, the same arguments, without a call per field
#: (core/frozen_make.py): for the transitions every job takes (sent,
#: completed, delivered).
make_transition = maker(Transition)
#: `StoredResult(...)` without a call per field: one for every result delivered.
make_stored_result = maker(StoredResult)
