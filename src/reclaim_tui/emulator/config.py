"""The emulator's settings (one dataclass, no I/O)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reclaim_tui.emulator.faults import FaultConfig

__all__ = ["DEFAULT_API_KEY", "EmulatorConfig"]

DEFAULT_API_KEY = "emulator-key"


@dataclass
class EmulatorConfig:
    """How the emulator behaves.

    `latency` is how long an interaction runs before it ends by itself (None:
    it stays `in_progress` until the admin API finishes it); `latency_range`,
    when set, replaces it with a per-interaction uniform draw from the seeded
    RNG. `api_key=None` turns the key check off. `clock` defaults to
    `time.time`; tests may inject their own.
    """

    api_key: str | None = DEFAULT_API_KEY
    latency: float | None = 0.0
    latency_range: tuple[float, float] | None = None
    seed: int = 0
    faults: FaultConfig = field(default_factory=FaultConfig)
    clock: Callable[[], float] = time.time

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
        )
        return cls(
            api_key=api_key, latency=latency, latency_range=latency_range, seed=seed, faults=faults
        )
