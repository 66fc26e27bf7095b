"""A running service's own state, as its control socket tells it, and the
pace an operator may change there: paused or not, the pass
interval (the longest sleep between passes), the API calls in flight.

`ServiceRecord` is what the loop (service.py) keeps of its passes;
`checked_pace` refuses a bad value before anything changes. No I/O.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from dataclasses import dataclass, field

from reclaim_tui.core.models import PassReport
from reclaim_tui.errors import ConfigError
from reclaim_tui.runner.commands import ServiceState, SetPace

__all__ = ["MAX_CONCURRENCY", "MAX_INTERVAL", "Pace", "ServiceRecord", "checked_pace"]

#: The longest pass interval (as `run --idle-sleep`'s bound: a day).
MAX_INTERVAL = 86400.0
#: The most API calls in flight (as `--concurrency`'s bound).
MAX_CONCURRENCY = 1024


@dataclass(frozen=True)
class Pace:
    """A checked `SetPace`: None leaves that one as it is."""

    paused: bool | None = None
    interval: float | None = None
    concurrency: int | None = None


def checked_pace(command: SetPace) -> Pace:
    """The change `command` asks for; ConfigError says what is wrong (and
    then nothing changes: every value is checked before any is applied)."""
    paused, interval, concurrency = command.paused, command.interval, command.concurrency
    if paused is not None and not isinstance(paused, bool):
        raise ConfigError(f"paused must be true or false, not {paused!r}")
    if interval is not None:
        if isinstance(interval, bool) or not isinstance(interval, int | float):
            raise ConfigError(f"interval must be a number of seconds, not {interval!r}")
        if not (math.isfinite(interval) and 0 < interval <= MAX_INTERVAL):
            raise ConfigError(
                f"interval {interval!r}: must be more than 0 and at most {MAX_INTERVAL:g} seconds"
            )
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int):
            raise ConfigError(f"concurrency must be a whole number, not {concurrency!r}")
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"concurrency {concurrency}: must be between 1 and {MAX_CONCURRENCY}")
    return Pace(paused, None if interval is None else float(interval), concurrency)


@dataclass
class ServiceRecord:
    """What the service did: its passes, the last one's time and outcome."""

    passes: int = 0
    last_at: float | None = None
    last_summary: str = ""
    last_unavailable: tuple[str, str] | None = None
    totals: Counter[str] = field(default_factory=Counter)

    def passed(self, report: PassReport) -> None:
        self.passes += 1
        self.last_at = time.time()
        self.last_summary = report.summary()
        self.last_unavailable = report.unavailable
        self.totals.update(report.counts)

    def failed(self, why: str) -> None:
        """A pass that could not run (its ledger unavailable): said as its outcome."""
        self.last_at = time.time()
        self.last_summary = why
        self.last_unavailable = None

    def state(
        self,
        *,
        stopping: bool,
        paused: bool,
        interval: float,
        concurrency: int,
        max_concurrency: int | None,
    ) -> ServiceState:
        word = "draining" if stopping else "paused" if paused else "up"
        return ServiceState(
            state=word,
            interval=interval,
            concurrency=concurrency,
            max_concurrency=max_concurrency,
            passes=self.passes,
            last_pass_at=self.last_at,
            last_summary=self.last_summary,
            last_unavailable=self.last_unavailable,
            totals=dict(self.totals),
            pid=os.getpid(),
        )
