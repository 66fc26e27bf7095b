"""The engine: the reclaim loop's orchestration over two ports (a Backend and
a Sink) and the ledger — one tick is recover, submit, send, reclaim, replay,
confirm cancels.

Every pass works in batches (batch_pass.py): a named claim of the ledger
takes a batch under a lease, the API calls of the batch run concurrently
under a bound, the state machine (`transitions`, `polling`) turns each
outcome into a compare-and-set, and the batch is written back in one
transaction. Errors stay in their row (rule 7): nothing one row does stops
the pass. Each pass has its module and takes the engine's parts (parts.py):
submitting, sending, reclaiming, delivering, confirming, recovering;
operator actions on single rows live in `operator` and `follow_up`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.engine import (
    confirming,
    delivering,
    lanes,
    reclaiming,
    recovering,
    sending,
    submitting,
)
from reclaim_tui.core.engine.circuit import Circuit
from reclaim_tui.core.engine.operator import Operator
from reclaim_tui.core.engine.pacing import AdaptiveLimit
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.transitions import EngineConfig
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, JobSpec, OrphanPolicy, PassReport
from reclaim_tui.core.sinks import Sink
from reclaim_tui.errors import LedgerError

# OrphanPolicy and PassReport live in models, EngineConfig in policy;
# re-exported here for the callers that build an engine.
__all__ = ["Engine", "EngineConfig", "OrphanPolicy", "PassReport"]

log = logging.getLogger("reclaim_tui.engine")


class Engine:
    """The reclaim loop over one ledger, one backend and one sink."""

    def __init__(
        self,
        ledger: Ledger,
        backend: Backend,
        sink: Sink,
        *,
        config: EngineConfig | None = None,
        owner: str | None = None,
        lane_ledgers: Sequence[Ledger] = (),
    ) -> None:
        """`lane_ledgers`: connections of their own for lanes 1, 2 … (the
        send and reclaim passes then run as that many claim–write loops at
        once; core/engine/lanes.py); their caller closes them."""
        self.parts = EngineParts(
            ledger, backend, sink, config or EngineConfig(), owner or str(this_process())
        )
        self._lane_ledgers = list(lane_ledgers)
        # Each lane's own state, kept across passes: its adaptive limit and
        # the leases a failed pass of it could not give back.
        self._lane_state: list[EngineParts] = []

    # -- the parts, as the callers know them -------------------------------------------
    @property
    def ledger(self) -> Ledger:
        return self.parts.ledger

    @property
    def backend(self) -> Backend:
        return self.parts.backend

    @property
    def sink(self) -> Sink:
        return self.parts.sink

    @property
    def owner(self) -> str:
        return self.parts.owner

    @property
    def circuit(self) -> Circuit:
        return self.parts.circuit

    @property
    def config(self) -> EngineConfig:
        return self.parts.config

    @config.setter
    def config(self, config: EngineConfig) -> None:
        self.parts.config = config

    @property
    def clock(self) -> Clock:
        return self.parts.clock

    @property
    def limit(self) -> AdaptiveLimit:
        """API calls in flight (core/engine/pacing.py), kept across passes; rebuilt
        when the config's concurrency changes."""
        return self.parts.limit

    def acting_as(self, actor: Actor) -> Engine:
        """This engine (same ledger, backend, sink, owner and circuit, and the
        same lanes with their state) writing its history as `actor`: the
        console's loop and its operator share one."""
        twin = Engine(self.ledger, self.backend, self.sink, owner=self.owner)
        twin.parts = self.parts.acting_as(actor)
        twin._lane_ledgers = self._lane_ledgers
        twin._lane_state = self._lane_state
        return twin

    @property
    def operator(self) -> Operator:
        """Operator actions (retry, cancel, adopt, replay by key) on this engine's ledger."""
        return Operator(self.parts)

    # -- the whole tick ------------------------------------------------------------
    async def tick(self, jobs: Sequence[JobSpec] = ()) -> PassReport:
        """One cron pass: recover orphans, reserve new jobs, send, reclaim, replay."""
        report = PassReport()
        self.circuit.next_pass()
        await self._release_stranded()
        report.merge(await self.recover_orphans())
        if jobs:
            report.merge(await self.submit(jobs, send=False))
        report.merge(await self._whole(self.send_reserved(), report))
        reclaimed = await self.reclaim()
        report.merge(reclaimed)
        if reclaimed.counts["gone"]:
            # Interactions the provider dropped went back to `reserving`.
            report.merge(await self._whole(self.send_reserved(), report))
        report.merge(await self.replay())
        report.merge(await self.confirm_cancels())
        log.info("tick: %s", report.summary())
        return report

    async def _release_stranded(self) -> None:
        """Give back the leases a failed pass kept because the ledger failed
        too (its server away): the rows are free again without waiting for
        their leases to run out."""
        for parts in [self.parts, *self._lane_state]:
            stranded = parts.stranded
            if stranded:
                keys = sorted(stranded)
                await parts.ledger.release(parts.owner, keys)
                stranded.difference_update(keys)

    @staticmethod
    async def _whole(step: Awaitable[PassReport], so_far: PassReport) -> PassReport:
        """A step of the tick; a ledger error that ended it carries the
        tick's report so far (with the step's own), not the step's alone."""
        try:
            return await step
        except LedgerError as exc:
            if exc.report is not None:
                whole = PassReport()
                whole.merge(so_far)
                whole.merge(exc.report)
                exc.report = whole
            raise

    # -- the passes (one module each) ----------------------------------------------
    async def submit(self, jobs: Sequence[JobSpec], *, send: bool = True) -> PassReport:
        """Reserve rows for new jobs (existing keys are left alone), then send."""
        if not self._lane_ledgers:
            return await submitting.submit(self.parts, jobs, send=send)
        report, keys = await submitting.reserve(self.parts, jobs)
        if send:
            # Each lane sends its share of these keys, in the submit's order.
            count = len(self._lane_ledgers) + 1
            report.merge(await self._across(lambda n, parts: _send(parts, keys[n::count])))
        return report

    async def send_reserved(self) -> PassReport:
        """Create an interaction for every due `reserving` row not in flight."""
        if not self._lane_ledgers:
            return await sending.send_reserved(self.parts)
        return await self._across(lambda _, parts: sending.send_reserved(parts))

    async def reclaim(self) -> PassReport:
        """Poll every due `submitted` row; store and deliver what completed."""
        if not self._lane_ledgers:
            return await reclaiming.reclaim(self.parts)
        return await self._across(lambda _, parts: reclaiming.reclaim(parts))

    async def _across(self, step: lanes.Step) -> PassReport:
        """`step` on every lane (lanes.across); until the API has answered,
        the first lane calls alone: a dead API costs one probe, not one a
        lane."""
        circuit = self.parts.circuit
        if circuit.answered:
            return await lanes.across(self._lanes(), step)
        answered = asyncio.Event()
        circuit.listeners.append(answered.set)
        try:
            return await lanes.across(self._lanes(), step, answered)
        finally:
            circuit.listeners.remove(answered.set)

    def _lanes(self) -> list[EngineParts]:
        """The parts of each lane for this pass: the engine's current
        backend, sink and configuration (a caller may swap them between
        passes), each lane's share of the calls in flight, its connection
        and owner; one circuit breaker for all (the API is one)."""
        count = len(self._lane_ledgers) + 1
        ledgers = [self.parts.ledger, *self._lane_ledgers]
        while len(self._lane_state) < count:
            n = len(self._lane_state)
            owner = self.owner if n == 0 else lanes.lane_owner(self.owner, n)
            self._lane_state.append(
                EngineParts(ledgers[n], self.backend, self.sink, self.config, owner)
            )
        made = []
        for n, kept in enumerate(self._lane_state):
            parts = EngineParts(
                ledgers[n],
                self.parts.backend,
                self.parts.sink,
                lanes.lane_config(self.config, count, n),
                kept.owner,
            )
            parts.circuit = self.parts.circuit
            parts.stranded = kept.stranded
            parts._limit = kept._limit
            kept._limit = parts.limit  # made for the lane's share, kept for the next pass
            made.append(parts)
        return made

    async def confirm_cancels(self) -> PassReport:
        """Ask the API again to cancel the rows whose remote cancel failed."""
        return await confirming.confirm_cancels(self.parts)

    async def replay(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Deliver stored results of `done` rows whose side effect did not finish
        (`force`: whatever their sink back-off says)."""
        return await delivering.replay(self.parts, force=force, idems=idems)

    async def recover_orphans(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Settle `reserving` rows whose create may have been sent and whose
        holder is gone (`force`: held and not-yet-due rows too)."""
        return await recovering.recover_orphans(self.parts, force=force, idems=idems)


async def _send(parts: EngineParts, keys: Sequence[str]) -> PassReport:
    """A lane's send pass over its share of a submit's keys (none: nothing)."""
    return await sending.send_reserved(parts, keys) if keys else PassReport()
