"""The emulator's interaction store: creation, lazy progress, admin edits, stats.

Progress is computed when an interaction is read (no timers). A background
interaction created at t with run time D is `queued` until t + share·D,
`in_progress` until t + D, then ends as its script says; its output steps
appear one by one as their time comes (GET and the SSE stream see the same
ones). What it will produce (`script.plan`), its run time and any forced
ending are decided at create time from the seeded RNG, so a run is
reproducible. A foreground interaction (background=false) is finished when
its create answers.

References between interactions are checked as the API checks them:
`previous_interaction_id` must name a stored interaction that is not still
running, a `continuation_token` must be the one that interaction handed out,
a `function_result` must answer one of its function calls. Codes and
messages for these refusals are not documented; ours are in the code.
"""

from __future__ import annotations

import itertools
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.emulator.content import digest, input_text, tokens
from reclaim_tui.emulator.errors import ApiProblem
from reclaim_tui.emulator.faults import FaultConfig, FaultDice
from reclaim_tui.emulator.request import CreateRequest
from reclaim_tui.emulator.script import Script, Turn, plan
from reclaim_tui.emulator.usage import usage

__all__ = ["PENDING", "InteractionStore", "StoredInteraction"]

PENDING = frozenset({"queued", "in_progress"})
_DEFAULT_ERROR = "the model failed to produce a response (emulated)"


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _user_steps(spec_input: Any) -> list[dict[str, Any]]:
    """The turn's input as the steps GET shows before the outputs."""
    if spec_input is None:
        return []
    if isinstance(spec_input, str):
        return [{"type": "user_input", "content": [{"type": "text", "text": spec_input}]}]
    if isinstance(spec_input, dict):
        return [{"type": "user_input", "content": [spec_input]}]
    if all(
        item.get("type") in ("text", "image", "audio", "video", "document") for item in spec_input
    ):
        return [{"type": "user_input", "content": list(spec_input)}]
    return list(spec_input)


@dataclass(frozen=True, slots=True)
class Settled:
    """An ending set before (or instead of) the scripted one: cancel, admin finish."""

    status: str
    at: float
    steps: tuple[tuple[float, dict[str, Any]], ...]
    errors: tuple[dict[str, Any], ...] = ()


@dataclass(eq=False)
class StoredInteraction:
    """One interaction as the emulator keeps it; `status` is live (read on the clock)."""

    id: str
    request: CreateRequest
    script: Script
    topic: str
    created_at: float
    start_at: float
    ready_at: float | None
    own_input: int
    cached: int
    clock: Callable[[], float] = field(repr=False, default=time.time)
    #: GET shows the turn's input as its first step(s) (EmulatorConfig.full_steps).
    show_input: bool = False
    forced: str | None = None
    forced_at: float = 0.0
    settled: Settled | None = None

    @property
    def labels(self) -> dict[str, str]:
        return self.request.labels

    @property
    def idem(self) -> str | None:
        return self.labels.get("idem")

    @property
    def status(self) -> str:
        return self.status_at(self.clock())

    @property
    def initial_status(self) -> str:
        """The status the create answer shows (nothing has run yet)."""
        if not self.request.background:
            return self.status_at(self.created_at)
        return "queued" if self.start_at > self.created_at else "in_progress"

    def status_at(self, now: float) -> str:
        if self.settled is not None:
            return self.settled.status
        if self.forced is not None:
            return self.forced
        if self.ready_at is not None and now >= self.ready_at:
            return self.script.status
        return "in_progress" if now >= self.start_at else "queued"

    def end_at(self) -> float | None:
        """When the run ended (or will end by itself); None: not by itself."""
        if self.settled is not None:
            return self.settled.at
        return None if self.forced is not None else self.ready_at

    def timed_steps(self) -> list[tuple[float, dict[str, Any]]]:
        """Every output step with the time it is done (future ones included)."""
        if self.settled is not None:
            return list(self.settled.steps)
        if self.ready_at is None:
            return []
        span = self.ready_at - self.start_at
        timed = [(self.start_at + p.at * span, p.step) for p in self.script.steps]
        if self.forced is not None:  # held by the admin API: what was done stays
            return [(at, step) for at, step in timed if at <= self.forced_at]
        return timed

    def steps_at(self, now: float) -> list[dict[str, Any]]:
        return [step for at, step in self.timed_steps() if at <= now]

    def errors(self) -> tuple[dict[str, Any], ...]:
        return self.settled.errors if self.settled is not None else self.script.errors

    def continuation_token(self, now: float) -> str | None:
        if self.status_at(now) != "requires_continuation":
            return None
        return self.script.continuation_token

    def usage_at(self, now: float) -> dict[str, Any]:
        return usage(self.steps_at(now), self.own_input, self.cached)

    def updated_at(self, now: float) -> float:
        end = self.end_at()
        if end is not None and now >= end:
            return end
        times = [at for at, _ in self.timed_steps() if at <= now]
        return max([self.created_at, *times, *([self.start_at] if now >= self.start_at else [])])

    def head(self) -> dict[str, Any]:
        """What every view of the interaction starts with."""
        body: dict[str, Any] = {"id": self.id, "object": "interaction"}
        if self.request.agent:
            body["agent"] = self.request.agent
        else:
            body["model"] = self.request.model
        return body

    def to_json(
        self, now: float | None = None, *, include_input: bool = False, outputs_only: bool = False
    ) -> dict[str, Any]:
        """The Interaction resource at `now`: GET's view, or the create answer's
        (`outputs_only`: "POST returns only output steps", the May 2026 migration guide)."""
        now = self.clock() if now is None else now
        status = self.status_at(now)
        body = self.head()
        body["status"] = status
        body["created"] = _iso(self.created_at)
        body["updated"] = _iso(self.updated_at(now))
        body.update(self.request.echo)
        if include_input and self.request.input is not None:
            body["input"] = self.request.input
        steps = self.steps_at(now)
        if self.show_input and not outputs_only:
            steps = _user_steps(self.request.input) + steps
        if steps:
            body["steps"] = steps
        if status not in PENDING and self.forced is None:
            body["usage"] = self.usage_at(now)
        token = self.continuation_token(now)
        if token is not None:
            body["continuation_token"] = token
        if status not in PENDING and self.errors():
            body["errors"] = list(self.errors())
        return body

    def created_view(self) -> dict[str, Any]:
        """The create answer: the state at creation for a background run, else the result."""
        if self.request.background:
            body = self.head()
            body.update(
                status=self.initial_status,
                created=_iso(self.created_at),
                updated=_iso(self.created_at),
            )
            body.update(self.request.echo)
            return body
        return self.to_json(self.created_at, outputs_only=True)

    def settle(self, status: str, text: str | None, error: str | None, at: float) -> None:
        """End now with `status`: the steps done so far stay; `text` becomes the final output."""
        if status == "completed" and self.ready_at is not None and self.forced is None:
            timed = [(min(t, at), step) for t, step in self.timed_steps()]
        else:
            timed = [(t, step) for t, step in self.timed_steps() if t <= at]
        if status == "completed" and not timed and text is None:
            # An interaction that never ran by itself (latency None): its script's output now.
            timed = [(at, p.step) for p in self.script.steps if p.step["type"] != "function_call"]
        if text is not None:
            timed = [(t, s) for t, s in timed if s["type"] != "model_output"]
            timed.append(
                (at, {"type": "model_output", "content": [{"type": "text", "text": text}]})
            )
        errors: tuple[dict[str, Any], ...] = ()
        if status == "failed" or error is not None:
            errors = ({"code": "model_error", "message": error or _DEFAULT_ERROR},)
        self.forced = None
        self.settled = Settled(status, at, tuple(timed), errors)


@dataclass
class _Resolved:
    topic: str
    calls: dict[str, str]
    rest: str | None
    cached: int


@dataclass
class InteractionStore:
    """All interactions plus the independent create log and call counters."""

    faults: FaultConfig
    dice: FaultDice
    latency: float | None = 0.0
    latency_range: tuple[float, float] | None = None
    seed: int = 0
    clock: Callable[[], float] = time.time
    agent_time_scale: float = 1.0
    queued_share: float = 0.1
    retention_seconds: float | None = None
    full_steps: bool = False
    interactions: dict[str, StoredInteraction] = field(default_factory=dict)
    creates_log: list[dict[str, Any]] = field(default_factory=list)
    creates_per_label: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    _tokens: dict[str, str] = field(default_factory=dict)
    _prefix: str = field(default_factory=lambda: secrets.token_hex(3))
    _seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # -- create ---------------------------------------------------------------------------
    def create(self, request: CreateRequest) -> StoredInteraction:
        """Store a new interaction (stored or not, per `store`); ApiProblem for a bad reference."""
        resolved = self._resolve(request)
        now = self.clock()
        seq = next(self._seq)
        turn = Turn(request, resolved.topic, resolved.calls, resolved.rest, self.full_steps)
        script = plan(turn, self._outcome(request))
        duration = self._duration(request, seq, script)
        queued = self.queued_share * duration if duration else 0.0
        interaction = StoredInteraction(
            id=f"emu-{self._prefix}-{seq:07d}",
            request=request,
            script=script,
            topic=resolved.topic,
            created_at=now,
            start_at=now + queued,
            ready_at=None if duration is None else now + duration,
            own_input=tokens(input_text(request.input)) if request.input is not None else 0,
            cached=resolved.cached,
            clock=self.clock,
            show_input=self.full_steps,
        )
        self.interactions[interaction.id] = interaction
        if script.continuation_token is not None:
            self._tokens[script.continuation_token] = interaction.id
        if interaction.idem is not None:
            self.creates_per_label[interaction.idem] += 1
        return interaction

    def _resolve(self, request: CreateRequest) -> _Resolved:
        previous = self._previous(request)
        rest = self._continued(request, previous)
        topic = previous.topic if previous is not None else input_text(request.input)
        calls: dict[str, str] = {}
        cached = 0
        if previous is not None:
            now = self.clock()
            steps = previous.steps_at(now)
            calls = {s["id"]: s["name"] for s in steps if s["type"] == "function_call"}
            spent = previous.usage_at(now)
            cached = spent["total_input_tokens"] + spent["total_output_tokens"]
        self._check_results(request, calls)
        return _Resolved(topic or "the request", calls, rest, cached)

    def _previous(self, request: CreateRequest) -> StoredInteraction | None:
        wanted = request.previous_interaction_id
        if wanted is None:
            return None
        previous = self.get(wanted)
        if previous is None or not previous.request.store:
            # Undocumented: 404, as a GET of the same id answers.
            raise ApiProblem(404, f"Previous interaction {wanted} not found.")
        if previous.status in PENDING:
            # Undocumented: a turn cannot follow one that is still running.
            raise ApiProblem(400, f"Previous interaction {wanted} is still {previous.status}.")
        return previous

    def _continued(self, request: CreateRequest, previous: StoredInteraction | None) -> str | None:
        token = request.continuation_token
        if token is None:
            return None
        owner = self.interactions.get(self._tokens.get(token, ""))
        if owner is None or (previous is not None and owner is not previous):
            # The SDK: "the server checks the token belongs to" previous_interaction_id.
            # A token may be sent twice: the SDK retries a failed hop with it.
            raise ApiProblem(400, "continuation_token is not valid for this interaction.")
        return owner.script.rest

    @staticmethod
    def _check_results(request: CreateRequest, calls: dict[str, str]) -> None:
        items = request.input if isinstance(request.input, list) else [request.input]
        for item in items:
            if isinstance(item, dict) and item.get("type") == "function_result":
                call_id = item.get("call_id")
                if call_id not in calls:
                    raise ApiProblem(
                        400,
                        f"function_result call_id {call_id!r} matches no function_call"
                        " of the previous interaction",
                    )

    def _outcome(self, request: CreateRequest) -> str | None:
        # Rolled in this order; a zero rate draws nothing, so seeds of runs
        # that never set the newer knobs see the same faults as before.
        faults = self.faults
        if self.dice.roll(faults.fail_rate):
            return "failed"
        for outcome, rate in (
            ("incomplete", faults.incomplete_rate),
            ("budget_exceeded", faults.budget_exceeded_rate),
            ("requires_action", faults.requires_action_rate),
        ):
            if self.dice.roll(rate):
                return outcome
        # Only foreground model runs stop at the decode limit: the SDK continues
        # them itself; background and agent runs are continued by the server.
        if not request.background and request.agent is None and request.continuation_token is None:
            if self.dice.roll(faults.continuation_rate):
                return "requires_continuation"
        return None

    def _duration(self, request: CreateRequest, seq: int, script: Script) -> float | None:
        if not request.background:
            return 0.0
        spec = request.agent_spec
        if spec is not None:
            jitter = 0.75 + int(digest(request.input)[:4], 16) / 0xFFFF / 2
            return spec.base_seconds * jitter * script.share * self.agent_time_scale
        return self._model_latency(seq)

    def _model_latency(self, seq: int) -> float | None:
        if self.latency_range is not None:
            # Its own RNG per interaction (seed, sequence number): the draw does
            # not depend on how many fault rolls happened before it.
            low, high = self.latency_range
            return random.Random(f"{self.seed}:{seq}").uniform(low, high)
        return self.latency

    def log_create(self, interaction: StoredInteraction, *, dropped: bool) -> None:
        self.creates_log.append(
            {
                "id": interaction.id,
                "idem": interaction.idem,
                "at": interaction.created_at,
                "dropped": dropped,
            }
        )

    # -- reads and edits ------------------------------------------------------------------
    def _alive(self, interaction: StoredInteraction, now: float) -> bool:
        if self.retention_seconds is None:
            return True
        return now < interaction.created_at + self.retention_seconds

    def get(self, interaction_id: str) -> StoredInteraction | None:
        """A stored interaction; None when unknown, not stored, or past retention."""
        interaction = self.interactions.get(interaction_id)
        if interaction is None or not interaction.request.store:
            return None
        if not self._alive(interaction, self.clock()):
            # Past retention the API answers 404 (DESIGN.md §6): gone for good.
            del self.interactions[interaction_id]
            return None
        return interaction

    def cancel(self, interaction: StoredInteraction) -> None:
        """Cancel a running background interaction; ApiProblem for any other."""
        status = interaction.status
        if status not in PENDING:
            # The SDK: cancel "only applies to background interactions that are
            # still running". The answer for others is not documented: 400.
            raise ApiProblem(
                400,
                f"Interaction {interaction.id} is {status}; only a running background"
                " interaction can be cancelled.",
            )
        interaction.settle("cancelled", None, None, self.clock())

    def delete(self, interaction_id: str) -> bool:
        if self.get(interaction_id) is None:
            return False
        del self.interactions[interaction_id]
        return True

    def finish(
        self, interaction: StoredInteraction, status: str, text: str | None, error: str | None
    ) -> None:
        """Set the status now (any string); a pending status stays until set again."""
        if status in PENDING:
            if interaction.forced is None:
                interaction.forced_at = self.clock()
            interaction.forced = status
            interaction.settled = None
            return
        interaction.settle(status, text, error, self.clock())

    def live(self) -> list[StoredInteraction]:
        """Every stored interaction still within retention."""
        return [i for i in list(self.interactions.values()) if self.get(i.id) is not None]

    def find(self, idem: str) -> list[StoredInteraction]:
        return [i for i in self.live() if i.idem == idem]

    def stats(self) -> dict[str, Any]:
        live = self.live()
        by_status = Counter(i.status for i in live)
        calls = {name: self.calls[name] for name in ("create", "get", "cancel", "delete")}
        calls["create_posts_received"] = self.calls["create_posts_received"]
        return {
            "creates_total": len(self.creates_log),
            "creates_per_label": dict(self.creates_per_label),
            "dropped_total": sum(1 for entry in self.creates_log if entry["dropped"]),
            "calls": calls,
            "interactions": len(live),
            "by_status": dict(by_status),
        }

    def reset(self, dice: FaultDice) -> None:
        self.dice = dice
        self.interactions.clear()
        self.creates_log.clear()
        self.creates_per_label.clear()
        self.calls.clear()
        self._tokens.clear()
        self._seq = itertools.count(1)
        self._prefix = secrets.token_hex(3)
