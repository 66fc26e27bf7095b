"""The emulator's settings (one dataclass, no I/O)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reclaim_tui.emulator.catalog import KNOWN_MODELS
from reclaim_tui.emulator.faults import FaultConfig
from reclaim_tui.emulator.webhook_settings import WebhookFaults, WebhookSettings

__all__ = ["DEFAULT_API_KEY", "EmulatorConfig"]

DEFAULT_API_KEY = "emulator-key"


@dataclass
class EmulatorConfig:
    """How the emulator behaves.

    `latency` is how long a background model interaction runs before it ends
    by itself (None: it stays `in_progress` until the admin API finishes it);
    `latency_range`, when set, replaces it with a per-interaction uniform draw
    from the seeded RNG. The first `queued_share` of a run is `queued` (none
    by default).
    Agents run for their own minutes (catalog.py) times `agent_time_scale`
    (tests use a small scale). Past `retention_seconds` after its creation an
    interaction is gone (404), as the real API drops stored interactions
    after 1 day (free tier) or 55 days (paid). `models`, when set, is the set
    of model names accepted (e.g. `catalog.KNOWN_MODELS`); None accepts any
    name. `full_steps` shows the whole step timeline as the real API does
    (GET starts with the turn's `user_input` step; a model's answer starts
    with a `thought` step): off by default only because tests outside the
    emulator's own (tests/e2e/test_cli.py, tests/contract/test_backend_contract.py)
    still read `steps[0]` as the answer. `api_key=None` turns the key check off. `clock` defaults to
    `time.time`; tests may inject their own. `webhooks` sets how webhooks are
    delivered (their faults are in `faults.webhooks`); when its
    `retry_window` is None, deliveries are retried for the API's 24 h times
    `agent_time_scale`. `usage_scale` multiplies the token counts a model's
    (first) and an agent's (second) usage reports (usage.scaled; the demo's).
    """

    api_key: str | None = DEFAULT_API_KEY
    latency: float | None = 0.0
    latency_range: tuple[float, float] | None = None
    seed: int = 0
    faults: FaultConfig = field(default_factory=FaultConfig)
    clock: Callable[[], float] = time.time
    agent_time_scale: float = 1.0
    #: The first share of a background run that is `queued`: 0 by default, as
    #: a recorded real Deep Research run never showed `queued`;
    #: a fault option (also `faults.queued_share`, settable by the admin API).
    queued_share: float = 0.0
    retention_seconds: float | None = None
    models: frozenset[str] | None = None
    full_steps: bool = True
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)
    usage_scale: tuple[float, float] = (1.0, 1.0)

    def __post_init__(self) -> None:
        if self.agent_time_scale < 0:
            raise ValueError("agent_time_scale must be >= 0")
        if min(self.usage_scale) < 0:
            raise ValueError("usage_scale must be >= 0")
        if not 0.0 <= self.queued_share < 1.0:
            raise ValueError("queued_share must be within [0, 1)")
        if self.retention_seconds is not None and self.retention_seconds <= 0:
            raise ValueError("retention_seconds must be > 0")

    @classmethod
    def from_flags(
        cls,
        *,
        api_key: str | None = DEFAULT_API_KEY,
        latency: float | None = 0.0,
        latency_range: tuple[float, float] | None = None,
        seed: int = 0,
        fail_rate: float = 0.0,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_503: float = 0.0,
        drop_rate: float = 0.0,
        slow_rate: float = 0.0,
        slow_seconds: float = 0.0,
        incomplete_rate: float = 0.0,
        budget_exceeded_rate: float = 0.0,
        requires_action_rate: float = 0.0,
        continuation_rate: float = 0.0,
        vanish_rate: float = 0.0,
        vanish_seconds: float = 0.0,
        queued_share: float = 0.0,
        agent_time_scale: float = 1.0,
        retention: float | None = None,
        strict_models: bool = False,
        full_steps: bool = True,
        webhooks: WebhookSettings | None = None,
        webhook_faults: WebhookFaults | None = None,
    ) -> EmulatorConfig:
        """Build a config from the flat values of `reclaim-tui emulator` flags."""
        faults = FaultConfig.uniform(
            rate_429=rate_429,
            rate_500=rate_500,
            rate_503=rate_503,
            drop_rate=drop_rate,
            slow_rate=slow_rate,
            slow_seconds=slow_seconds,
            fail_rate=fail_rate,
            incomplete_rate=incomplete_rate,
            budget_exceeded_rate=budget_exceeded_rate,
            requires_action_rate=requires_action_rate,
            continuation_rate=continuation_rate,
            vanish_rate=vanish_rate,
            vanish_seconds=vanish_seconds,
            webhooks=(webhook_faults or WebhookFaults()).to_json(),
        )
        return cls(
            api_key=api_key,
            latency=latency,
            latency_range=latency_range,
            seed=seed,
            faults=faults,
            queued_share=queued_share,
            agent_time_scale=agent_time_scale,
            retention_seconds=retention,
            models=KNOWN_MODELS if strict_models else None,
            full_steps=full_steps,
            webhooks=webhooks or WebhookSettings(),
        )
