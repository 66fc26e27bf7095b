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
a `function_result` must name its function. Codes and messages for these
refusals are not documented unless the code names a recorded one.
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
from reclaim_tui.emulator.interaction import PENDING, StoredInteraction
from reclaim_tui.emulator.request import CreateRequest
from reclaim_tui.emulator.script import Script, Turn, plan

__all__ = ["PENDING", "InteractionStore", "StoredInteraction"]


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
    queued_share: float = 0.0
    retention_seconds: float | None = None
    full_steps: bool = True
    #: Token counts' factor for models, for agents (EmulatorConfig.usage_scale).
    usage_scale: tuple[float, float] = (1.0, 1.0)
    #: Called with each interaction created, cancelled or finished by the
    #: admin API (the webhook watcher's hook: the store has no timers).
    on_change: Callable[[StoredInteraction], None] | None = None
    interactions: dict[str, StoredInteraction] = field(default_factory=dict)
    creates_log: list[dict[str, Any]] = field(default_factory=list)
    creates_per_label: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    #: Custom (managed) agents by id: the `/agents` resource (agents.py).
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
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
        share = self.faults.queued_share or self.queued_share
        queued = share * duration if duration else 0.0
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
            usage_scale=self.usage_scale[1 if request.agent_spec is not None else 0],
        )
        if self.dice.roll(self.faults.vanish_rate):
            interaction.hidden_until = now + self.faults.vanish_seconds
        self.interactions[interaction.id] = interaction
        if script.continuation_token is not None:
            self._tokens[script.continuation_token] = interaction.id
        if interaction.idem is not None:
            self.creates_per_label[interaction.idem] += 1
        self._changed(interaction)
        return interaction

    def _changed(self, interaction: StoredInteraction) -> None:
        if self.on_change is not None:
            self.on_change(interaction)

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
        """Learn the calls the input answers itself; refuse a result without a name.

        A stateless turn sends the whole history, the call and its result in
        the same input (the JS SDK's function-calling client-state sample), so
        a call is looked for there as well as in the previous interaction. A
        `call_id` found nowhere is not refused: no recorded answer shows the
        API refusing one. A `function_result` without its function's `name`
        is: the live endpoint answered it 400 "Invalid input received"
        (robocurve/inspect-robots#380, kept in tests/contract/recorded/).
        """
        items = request.input if isinstance(request.input, list) else [request.input]
        for item in items:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call" and isinstance(item.get("id"), str):
                calls[item["id"]] = str(item.get("name") or "")
            elif item.get("type") == "function_result":
                name = item.get("name")
                if not isinstance(name, str) or not name:
                    raise ApiProblem(400, "Invalid input received.")

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
        self._changed(interaction)

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
        else:
            interaction.settle(status, text, error, self.clock())
        self._changed(interaction)

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
        self.agents.clear()
        self._tokens.clear()
        self._seq = itertools.count(1)
        self._prefix = secrets.token_hex(3)
