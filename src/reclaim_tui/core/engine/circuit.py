"""The circuit breaker: after a few consecutive failures outside the jobs,
a pass stops calling the API and says why.

A key the API refuses, a network that is down, a rate limit or an API at
capacity is nobody's job's fault: calling on for every due row would only
spend a whole batch of calls (and, for creates whose outcome is unknown,
money) to learn the same thing. After `threshold` such failures in a row
the circuit opens; the pass leaves the rest of its rows untouched and the
CLI exits with its own code. A long-lived engine (the console's loop) tries
again on its next pass with a single probe: one more outside failure opens
the circuit again at once, one success closes it.

Until one call has come back without an outside failure (`warm`), the
engine sends calls one at a time: with 16 calls in flight at once, a dead
API would otherwise cost 16 calls before the breaker could say anything.
A process's lanes share one circuit, and only the first lane calls until
the API has answered (`answered`, `listeners`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from reclaim_tui.errors import BackendError, NotCreatedError

__all__ = ["Circuit"]


@dataclass
class Circuit:
    threshold: int = 5
    consecutive: int = 0
    tripped: BackendError | None = None
    probing: bool = False
    warm: bool = False
    #: this pass's calls: how many came back, how many failed outside the job
    calls: int = 0
    last_outside: BackendError | None = None
    #: called at each outcome once the API has answered (`answered`): a
    #: process's other lanes start their calls then (core/engine/lanes.py)
    listeners: list[Callable[[], None]] = field(default_factory=list, repr=False)

    @property
    def answered(self) -> bool:
        """A call came back in good order (warm), or the circuit opened:
        the probe a cold or tripped circuit sends alone is over."""
        return self.warm or self.tripped is not None

    @property
    def open(self) -> bool:
        return self.tripped is not None

    def record(self, outcome: object) -> None:
        """Count one API call's outcome (a result, or the exception it raised)."""
        self.calls += 1
        if isinstance(outcome, BackendError) and outcome.cause is not None:
            self.last_outside = outcome
            self.consecutive += 1
            if self.consecutive >= (1 if self.probing else self.threshold):
                self.tripped = outcome
                self._tell()
            return
        self.consecutive = 0
        self.probing = False
        self.warm = True
        self._tell()

    def _tell(self) -> None:
        for listener in self.listeners:
            listener()

    def refused_everything(self) -> BackendError | None:
        """The last outside failure, when every call of this pass failed
        outside the job (fewer than `threshold` calls, or the circuit would
        have opened): the API is refusing us all the same."""
        # Only refusals that say something about every call (a key the API
        # refuses, no network): a lone 429 or 503 in a small pass is weather.
        last = self.last_outside
        if not (self.calls and self.consecutive == self.calls and last is not None):
            return None
        certain = last.cause == "auth" or (
            last.cause == "transport" and isinstance(last, NotCreatedError)
        )  # a refused key, a connection that could not be made — not a timeout
        return last if certain else None

    def next_pass(self) -> None:
        """A new pass: an open circuit becomes a single probe."""
        self.calls = 0
        self.last_outside = None
        if self.tripped is not None:
            self.tripped = None
            self.consecutive = 0
            self.probing = True
            self.warm = False
