"""The emulator's interaction store: creation, lazy completion, admin edits, stats.

Completion is computed when an interaction is read (no timers): an
interaction created at t with latency L reports its final status from t + L on,
by the injected clock. The final status (completed or failed) and the latency
draw are decided at create time from the seeded RNG, so a run is reproducible.
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

from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.emulator.faults import FaultConfig, FaultDice

__all__ = ["InteractionStore", "StoredInteraction"]

_PENDING = frozenset({"queued", "in_progress"})


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


@dataclass(slots=True)
class StoredInteraction:
    """One interaction as the emulator keeps it."""

    id: str
    model: str
    input: Any
    labels: dict[str, str]
    created_at: float
    ready_at: float | None
    final_status: str
    status: str = "in_progress"
    output: str | None = None
    error: str | None = None
    updated_at: float = 0.0

    @property
    def idem(self) -> str | None:
        return self.labels.get("idem")

    def advance(self, now: float) -> None:
        if self.status in _PENDING and self.ready_at is not None and now >= self.ready_at:
            self.settle(self.final_status, None, None, self.ready_at)

    def settle(self, status: str, text: str | None, error: str | None, at: float) -> None:
        self.status = status
        self.updated_at = at
        if status == "completed":
            self.output = text if text is not None else fake_output_text(self.input)
        elif status == "failed" or error is not None:
            self.error = error or "the model failed to produce a response (emulated)"
        if text is not None:
            self.output = text

    def to_json(self, include_input: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "status": self.status,
            "model": self.model,
            "created": _iso(self.created_at),
            "updated": _iso(self.updated_at),
        }
        if self.labels:
            body["labels"] = self.labels
        if include_input:
            body["input"] = self.input
        if self.output is not None:
            body["steps"] = [
                {"type": "model_output", "content": [{"type": "text", "text": self.output}]}
            ]
            input_tokens = len(str(self.input).split())
            output_tokens = len(self.output.split())
            body["usage"] = {
                "total_input_tokens": input_tokens,
                "total_output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            }
        if self.error is not None:
            body["errors"] = [{"code": "model_error", "message": self.error}]
        return body


@dataclass
class InteractionStore:
    """All interactions plus the independent create log and call counters."""

    faults: FaultConfig
    dice: FaultDice
    latency: float | None = 0.0
    latency_range: tuple[float, float] | None = None
    seed: int = 0
    clock: Callable[[], float] = time.time
    interactions: dict[str, StoredInteraction] = field(default_factory=dict)
    creates_log: list[dict[str, Any]] = field(default_factory=list)
    creates_per_label: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    _prefix: str = field(default_factory=lambda: secrets.token_hex(3))
    _seq: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def create(
        self, model: str, spec_input: Any, labels: dict[str, str], *, background: bool
    ) -> StoredInteraction:
        now = self.clock()
        seq = next(self._seq)
        ready_at = self._ready_at(now, seq) if background else now
        final = "failed" if self.dice.roll(self.faults.fail_rate) else "completed"
        interaction = StoredInteraction(
            id=f"emu-{self._prefix}-{seq:07d}",
            model=model,
            input=spec_input,
            labels=labels,
            created_at=now,
            ready_at=ready_at,
            final_status=final,
            updated_at=now,
        )
        self.interactions[interaction.id] = interaction
        if interaction.idem is not None:
            self.creates_per_label[interaction.idem] += 1
        if not background:
            interaction.advance(now)
        return interaction

    def log_create(self, interaction: StoredInteraction, *, dropped: bool) -> None:
        self.creates_log.append(
            {
                "id": interaction.id,
                "idem": interaction.idem,
                "at": interaction.created_at,
                "dropped": dropped,
            }
        )

    def get(self, interaction_id: str) -> StoredInteraction | None:
        interaction = self.interactions.get(interaction_id)
        if interaction is not None:
            interaction.advance(self.clock())
        return interaction

    def cancel(self, interaction: StoredInteraction) -> None:
        if interaction.status in _PENDING:
            interaction.settle("cancelled", None, None, self.clock())

    def delete(self, interaction_id: str) -> bool:
        return self.interactions.pop(interaction_id, None) is not None

    def finish(
        self, interaction: StoredInteraction, status: str, text: str | None, error: str | None
    ) -> None:
        """Set the status now (any string); a pending status stays until set again."""
        now = self.clock()
        if status in _PENDING:
            interaction.status = status
            interaction.ready_at = None
            interaction.updated_at = now
            return
        interaction.settle(status, text, error, now)

    def find(self, idem: str) -> list[StoredInteraction]:
        now = self.clock()
        found = [i for i in self.interactions.values() if i.idem == idem]
        for interaction in found:
            interaction.advance(now)
        return found

    def stats(self) -> dict[str, Any]:
        now = self.clock()
        by_status: Counter[str] = Counter()
        for interaction in self.interactions.values():
            interaction.advance(now)
            by_status[interaction.status] += 1
        calls = {name: self.calls[name] for name in ("create", "get", "cancel", "delete")}
        calls["create_posts_received"] = self.calls["create_posts_received"]
        return {
            "creates_total": len(self.creates_log),
            "creates_per_label": dict(self.creates_per_label),
            "dropped_total": sum(1 for entry in self.creates_log if entry["dropped"]),
            "calls": calls,
            "interactions": len(self.interactions),
            "by_status": dict(by_status),
        }

    def reset(self, dice: FaultDice) -> None:
        self.dice = dice
        self.interactions.clear()
        self.creates_log.clear()
        self.creates_per_label.clear()
        self.calls.clear()
        self._seq = itertools.count(1)
        self._prefix = secrets.token_hex(3)

    def _ready_at(self, now: float, seq: int) -> float | None:
        if self.latency_range is not None:
            # Its own RNG per interaction (seed, sequence number): the draw does
            # not depend on how many fault rolls happened before it.
            low, high = self.latency_range
            return now + random.Random(f"{self.seed}:{seq}").uniform(low, high)
        if self.latency is None:
            return None
        return now + self.latency
