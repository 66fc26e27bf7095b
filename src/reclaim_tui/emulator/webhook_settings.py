"""How the emulator delivers webhooks (`WebhookSettings`) and what goes wrong on the
way (`WebhookFaults`). Plain values, no I/O.

The real API documents at-least-once delivery retried with backoff "for up to
24 hours" and disables a webhook that keeps failing (DESIGN.md §7); its
backoff schedule, attempt timeout and failure threshold are not published,
so the defaults here are the emulator's choice.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DAY_SECONDS", "WebhookFaults", "WebhookSettings"]

DAY_SECONDS = 24 * 60 * 60.0
_FAULT_FIELDS = ("delay_seconds", "duplicate_rate", "reorder_window", "drop_rate", "seed")


def _rate(value: Any, name: str) -> float:
    rate = float(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {rate}")
    return rate


def _seconds(value: Any, name: str) -> float:
    seconds = float(value)
    if seconds < 0:
        raise ValueError(f"{name} must be >= 0, got {seconds}")
    return seconds


@dataclass(frozen=True)
class WebhookFaults:
    """Faults of webhook delivery; all off by default.

    `delay_seconds` is added before an event's first attempt.
    `duplicate_rate`: the chance an event is delivered twice (same
    `webhook-id`, as an at-least-once sender repeats itself).
    `reorder_window`: events are held this long, then sent in a random order.
    `drop_rate`: the chance one attempt is lost (never sent); it counts as a
    failed attempt and is retried after the backoff. `seed` seeds these
    rolls (None: the emulator's seed); rolls use their own RNG, so turning
    webhook faults on does not change the interaction faults of a seeded run.
    """

    delay_seconds: float = 0.0
    duplicate_rate: float = 0.0
    reorder_window: float = 0.0
    drop_rate: float = 0.0
    seed: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> WebhookFaults:
        data = data or {}
        unknown = set(data) - set(_FAULT_FIELDS)
        if unknown:
            raise ValueError(f"unknown webhook fault settings: {', '.join(sorted(unknown))}")
        seed = data.get("seed")
        return cls(
            delay_seconds=_seconds(data.get("delay_seconds", 0.0), "delay_seconds"),
            duplicate_rate=_rate(data.get("duplicate_rate", 0.0), "duplicate_rate"),
            reorder_window=_seconds(data.get("reorder_window", 0.0), "reorder_window"),
            drop_rate=_rate(data.get("drop_rate", 0.0), "drop_rate"),
            seed=None if seed is None else int(seed),
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WebhookSettings:
    """The delivery schedule.

    Attempt n (n >= 1) that fails is retried after `backoff_base · 2^(n-1)`
    seconds, at most `backoff_cap`; an attempt gets `attempt_timeout` seconds
    to answer. An event is given up once its next attempt would start more
    than `retry_window` seconds after the event (the API's 24 h; None: scaled
    from the 24 h by the emulator's `agent_time_scale`, see
    `EmulatorConfig`), or after `max_attempts` attempts when set. A static
    webhook is disabled (`disabled_due_to_failed_deliveries`) after
    `disable_after` failed attempts in a row. After a rotation the previous
    secrets still sign for `secret_overlap` seconds (the SDK's
    `revoke_previous_secrets_after_h24`).
    """

    backoff_base: float = 0.5
    backoff_cap: float = 60.0
    attempt_timeout: float = 10.0
    retry_window: float | None = None
    max_attempts: int | None = None
    disable_after: int = 20
    secret_overlap: float = DAY_SECONDS

    def __post_init__(self) -> None:
        if self.backoff_base <= 0 or self.backoff_cap < self.backoff_base:
            raise ValueError("backoff_base must be > 0 and backoff_cap >= backoff_base")
        if self.attempt_timeout <= 0:
            raise ValueError("attempt_timeout must be > 0")
        if self.retry_window is not None and self.retry_window < 0:
            raise ValueError("retry_window must be >= 0")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.disable_after < 1:
            raise ValueError("disable_after must be >= 1")

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based)."""
        return float(min(self.backoff_cap, self.backoff_base * 2 ** min(attempt - 1, 60)))
