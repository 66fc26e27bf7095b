"""What every pass and every operator action works with: the engine's parts.

One ledger, one backend (the API), one sink, the configuration, this
process's owner identity, the circuit breaker and the adaptive limit of
calls in flight. `Engine` (engine.py) orchestrates the passes over one
`EngineParts`; the passes (sending, reclaiming, delivering, recovering,
confirming) and the operator's actions (operator, follow_up) take the parts,
never the `Engine`, so nothing in this room imports engine.py back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.engine.circuit import Circuit
from reclaim_tui.core.engine.pacing import AdaptiveLimit
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.engine.transitions import describe
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, PassReport
from reclaim_tui.core.sinks import Sink

__all__ = ["EngineParts"]


@dataclass
class EngineParts:
    """The ports, configuration and per-process state the passes share."""

    ledger: Ledger
    backend: Backend
    sink: Sink
    config: EngineConfig
    owner: str
    circuit: Circuit = field(init=False)
    #: leases a failed pass could not give back (the ledger failed too):
    #: released before the next pass
    stranded: set[str] = field(default_factory=set, init=False)
    _limit: AdaptiveLimit | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.circuit = Circuit(self.config.circuit_threshold)

    @property
    def clock(self) -> Clock:
        return self.ledger.clock

    def acting_as(self, actor: Actor) -> EngineParts:
        """The same parts (ledger, backend, sink, owner, circuit and limit)
        writing their history as `actor`."""
        twin = EngineParts(
            self.ledger,
            self.backend,
            self.sink,
            dataclasses.replace(self.config, actor=actor),
            self.owner,
        )
        twin.circuit = self.circuit
        twin.stranded = self.stranded
        twin._limit = self.limit
        return twin

    @property
    def limit(self) -> AdaptiveLimit:
        """API calls in flight (core/engine/pacing.py), kept across passes; rebuilt
        when the config's concurrency changes."""
        start = self.config.concurrency
        ceiling = self.config.max_concurrency or start
        current = self._limit
        if current is None or (current.start, current.ceiling) != (start, max(start, ceiling)):
            current = self._limit = AdaptiveLimit(start, ceiling)
        return current

    def flight(self) -> int:
        """Rows a pass that calls the API claims at a time: what this process
        can have in flight (its concurrency, as paced now), at most a batch.
        A process that claimed the whole batch (500) sent every create while
        other hosts idled, and when it died nothing was sent for a lease;
        now the hosts share the work, and a dead one delays only
        the rows it had in flight."""
        return max(1, min(self.config.batch_size, self.limit.current))

    def noted(self, report: PassReport) -> PassReport:
        """Say in the report when the circuit breaker stopped calling the API,
        or when every call of the pass failed for a cause outside the jobs."""
        tripped = self.circuit.tripped or self.circuit.refused_everything()
        if tripped is not None:
            report.unavailable = (tripped.cause or "unknown", describe(tripped))
        return report
