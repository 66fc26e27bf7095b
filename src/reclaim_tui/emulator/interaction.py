"""One interaction as the emulator keeps it: its request, its script, and where
its run stands at any moment (status, steps done, usage, the JSON views).

Nothing here runs by itself: every view is computed from the clock. A run of
a background interaction is `queued` until `start_at`, `in_progress` until
`ready_at`, then ends as its script says; its output steps are done at their
planned fractions of the run. `settle` ends it early (cancel, admin finish).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.emulator.request import CreateRequest
from reclaim_tui.emulator.script import Script
from reclaim_tui.emulator.usage import scaled, usage

__all__ = ["NOT_ECHOED_BY_CREATE", "PENDING", "Settled", "StoredInteraction", "iso"]

PENDING = frozenset({"queued", "in_progress"})
#: Request fields a create's answer does not carry back. Answers recorded from
#: the real API (tests/contract/recorded/vercel_ai/) to requests that sent a
#: response_format, function tools, a google_search tool, generation_config
#: or previous_interaction_id hold exactly the same keys as a plain answer;
#: system_instruction is left out on the same report, though the request of
#: the recorded answer that shows it is not kept with it.
NOT_ECHOED_BY_CREATE = frozenset(
    {
        "generation_config",
        "response_format",
        "tools",
        "system_instruction",
        "previous_interaction_id",
    }
)
_DEFAULT_ERROR = "the model failed to produce a response (emulated)"


def iso(at: float) -> str:
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


def _final_output(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outputs = [step for step in steps if step["type"] == "model_output"]
    return outputs[-1:]


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
    #: Factor of the usage's token counts (EmulatorConfig.usage_scale).
    usage_scale: float = 1.0
    #: Until then a GET answers 404 although it is stored (FaultConfig.vanish_rate).
    hidden_until: float = 0.0

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
        spec = self.request.agent_spec
        body = usage(
            self.steps_at(now),
            self.own_input,
            self.cached,
            research=spec is not None and spec.researches,
            streamed=self.request.stream,
        )
        return scaled(body, self.usage_scale)

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
        environment = self.request.echo.get("environment")
        if environment is not None:
            # "Only populated if environment config is set in the request" (the
            # SDK's Interaction.environment_id): a string other than "remote"
            # names an existing environment; else one is made for the turn.
            named = isinstance(environment, str) and environment != "remote"
            body["environment_id"] = environment if named else f"env-{self.id}"
        return body

    def to_json(
        self, now: float | None = None, *, include_input: bool = False, outputs_only: bool = False
    ) -> dict[str, Any]:
        """The Interaction resource at `now`: GET's view, or the create answer's
        (`outputs_only`: "POST returns only output steps", the Interactions migration guide)."""
        now = self.clock() if now is None else now
        status = self.status_at(now)
        body = self.head()
        body["status"] = status
        body["created"] = iso(self.created_at)
        body["updated"] = iso(self.updated_at(now))
        body.update(self.request.echo)
        if include_input and self.request.input is not None:
            body["input"] = self.request.input
        steps = self.steps_at(now)
        spec = self.request.agent_spec
        if spec is not None and spec.researches and not outputs_only:
            # A recorded real run showed no step of its own while it ran, and
            # once completed only its report after the input, with `updated`
            # equal to `created`; its stream shows the steps on the way.
            if status in PENDING:
                steps = []
            elif status == "completed":
                steps = _final_output(steps)
                body["updated"] = body["created"]
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
        """The create answer: the state at creation for a background run, else the result.

        Recorded real create answers carry the tier the turn ran on
        ("standard" when none was asked for) and none of NOT_ECHOED_BY_CREATE."""
        if self.request.background:
            body = self.head()
            body.update(
                status=self.initial_status,
                created=iso(self.created_at),
                updated=iso(self.created_at),
            )
            body.update(self.request.echo)
        else:
            body = self.to_json(self.created_at, outputs_only=True)
        body.setdefault("service_tier", "standard")
        if not self.request.store:
            # A recorded real answer to a create with store=false has no id:
            # nothing can be fetched or continued by one.
            del body["id"]
        return {name: value for name, value in body.items() if name not in NOT_ECHOED_BY_CREATE}

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
