"""How the engine paces its work: concurrency, leases, attempts, backoff,
polls, deadlines, and the policies for orphans and vanished interactions."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from reclaim_tui.core.models import Actor, GonePolicy, JobSpec, OrphanPolicy

__all__ = ["ZERO_FIRST_POLL_GRID", "EngineConfig"]

#: With `--first-poll 0`, the grid of the later polls: ages 2, 4, 8 … s.
ZERO_FIRST_POLL_GRID = 1.0


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """How the engine paces its work: concurrency, leases, attempts, backoff, polls."""

    concurrency: int = 16
    #: above `concurrency`: API calls in flight grow up to this while the
    #: API keeps up (core/engine/pacing.py); None (the default): a fixed limit
    max_concurrency: int | None = None
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
    #: what a 404 for a row that has an interaction does past retention (`--on-gone`)
    on_gone: GonePolicy = GonePolicy.RESUBMIT
    #: how long the API keeps an interaction (`--retention-days`; 55 days paid
    #: tier): a 404 for a younger one is no proof of loss
    retention: float = 55 * 86400.0
    #: inside retention, how long a row whose interaction answers 404 is polled
    #: again (with backoff) before it is held for an operator (`--gone-grace`)
    gone_grace: float = 6 * 3600.0
    #: creates carry a webhook_config and an inbox keeps the events
    #: (core/ledger/inbox.py): orphans are looked up there first
    webhooks: bool = False
    #: with webhooks, how long after its create was sent an orphan waits for
    #: an event naming it before the orphan policy applies. Delivery is
    #: at-least-once and retried for up to 24 h, and an interaction's first
    #: event comes when it ends: "no event yet" proves nothing until then.
    webhook_grace: float = 900.0

    def orphan_window(self) -> float:
        """How long after an attempt was sent a lookup that finds nothing is
        no proof yet (the label lookup's window, or the webhook grace)."""
        return max(self.lookup_window, self.webhook_grace) if self.webhooks else self.lookup_window

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

        A first poll of 0 means "at the first pass"; the later polls then sit
        on the grid of ZERO_FIRST_POLL_GRID (2, 4, 8 … s): "due at once" after
        every poll would poll a running job in a loop, flooding the API.
        """
        base = self.first_poll if self.first_poll > 0 else ZERO_FIRST_POLL_GRID
        age = now - submitted_at
        exponent = polls
        if age >= base * 2.0 ** min(exponent, 40):
            # That grid point has passed (a late tick): take the first one
            # after now, never "due at once", or a late row is polled twice.
            exponent = math.floor(math.log2(age / base)) + 1
        target = submitted_at + base * 2.0 ** min(exponent, 40)
        return min(target, now + self.poll_cap)
