"""The engine: the passes of the reclaim loop — submit, send, reclaim, replay,
recover — over two ports (a Backend and a Sink) and the ledger.

Every pass works in batches: a named claim of the ledger takes a batch under
a lease, the API calls of the batch run concurrently under a bound, the
state machine (`transitions`) turns each outcome into a compare-and-set, and
the batch is written back in one transaction. Errors stay in their row
(rule 7): nothing one row does stops the pass. Operator actions on single
rows live in `operator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from reclaim_tui.core import transitions
from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import Claim, Ledger
from reclaim_tui.core.models import (
    JobSpec,
    OrphanPolicy,
    PassReport,
    RemoteInteraction,
    Row,
    Status,
    StoredResult,
)
from reclaim_tui.core.operator import Operator
from reclaim_tui.core.owner import holder_alive, this_process
from reclaim_tui.core.sinks import Sink
from reclaim_tui.core.transitions import EngineConfig, Transition, describe
from reclaim_tui.errors import BackendError, SinkError

# OrphanPolicy and PassReport live in models, EngineConfig in transitions;
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
    ) -> None:
        self.ledger = ledger
        self.backend = backend
        self.sink = sink
        self.config = config or EngineConfig()
        self.owner = owner or str(this_process())

    @property
    def clock(self) -> Clock:
        return self.ledger.clock

    @property
    def operator(self) -> Operator:
        """Operator actions (retry, cancel, adopt, replay by key) on this engine's ledger."""
        return Operator(self)

    # -- the whole tick ------------------------------------------------------------
    async def tick(self, jobs: Sequence[JobSpec] = ()) -> PassReport:
        """One cron pass: recover orphans, reserve new jobs, send, reclaim, replay."""
        report = PassReport()
        report.merge(await self.recover_orphans())
        if jobs:
            report.merge(await self.submit(jobs, send=False))
        report.merge(await self.send_reserved())
        reclaimed = await self.reclaim()
        report.merge(reclaimed)
        if reclaimed.counts["gone"]:
            # Interactions the provider dropped went back to `reserving`.
            report.merge(await self.send_reserved())
        report.merge(await self.replay())
        log.info("tick: %s", report.summary())
        return report

    async def submit(self, jobs: Sequence[JobSpec], *, send: bool = True) -> PassReport:
        """Reserve rows for new jobs (existing keys are left alone), then send."""
        report = PassReport()
        rows = [(idempotency_key(j), j.to_json(), j.model) for j in jobs]
        inserted, present = await self.ledger.insert_jobs(rows, self.config.actor)
        report.counts["inserted"] += len(inserted)
        report.counts["already_present"] += len(present)
        crashpoint("after_reserve_commit")
        if send:
            report.merge(await self.send_reserved())
        return report

    # -- sending -----------------------------------------------------------------------
    async def send_reserved(self) -> PassReport:
        """Create an interaction for every due `reserving` row not in flight."""
        report = PassReport()
        while claim := await self._claimed(self.ledger.claim_sendable, self.config.actor):
            crashpoint("before_create")
            async with self._holding(claim.rows):
                outcomes = await self._each(claim.rows, self._create_one)
            crashpoint("after_create_before_handle")
            now = self.clock.now()
            todo = [transitions.after_create(r, o, self.config, now) for r, o in outcomes]
            applied = await self._apply(todo, report)
            crashpoint("after_handle_commit")
            await self._disown_late_creates(todo, applied)
        return report

    async def _create_one(self, row: Row) -> RemoteInteraction:
        return await self.backend.create(row.job, row.idem)

    # -- reclaiming -------------------------------------------------------------------
    async def reclaim(self) -> PassReport:
        """Poll every due `submitted` row; store and deliver what completed."""
        report = PassReport()
        while claim := await self._claimed(self.ledger.claim_pollable):
            async with self._holding(claim.rows):
                outcomes = await self._each(claim.rows, self._get_one)
                report.counts["polled"] += len(outcomes)
                crashpoint("after_fetch_before_done")
                now = self.clock.now()
                todo = [transitions.after_poll(r, o, self.config, now) for r, o in outcomes]
                applied = await self._apply(todo, report)
                # Deliver exactly what was just committed with `done` (the same
                # values, not a second read of them).
                now = self.clock.now()
                stored = {
                    t.idem: _stored(t.idem, t.result, now)
                    for t in todo
                    if t.to == Status.DONE and t.result is not None and t.idem in applied
                }
                done = [row for row in claim.rows if row.idem in stored]
                crashpoint("after_done_before_sink")
                if done:
                    await self._deliver(done, report, stored)
        return report

    async def _get_one(self, row: Row) -> RemoteInteraction:
        assert row.handle is not None, "submitted rows always have a handle"
        return await self.backend.get(row.handle)

    # -- replay and delivery ------------------------------------------------------------
    async def replay(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Deliver stored results of `done` rows whose side effect did not finish.

        `force` also takes rows whose sink back-off has not run out (an
        operator's "replay now"); each row is tried at most once per call.
        """
        report = PassReport()
        seen: set[str] = set()
        while claim := await self._claimed(
            self.ledger.claim_undelivered, force=force, idems=idems, exclude=seen
        ):
            seen.update(r.idem for r in claim.rows)
            report.counts["replayed"] += len(claim.rows)
            async with self._holding(claim.rows):
                await self._deliver(claim.rows, report)
        return report

    async def _deliver(
        self,
        rows: Sequence[Row],
        report: PassReport,
        stored: dict[str, StoredResult] | None = None,
    ) -> None:
        """Run the sink from the STORED results (never the API), then commit
        `consumed`; a failing sink leaves its row `done` for a later replay."""
        idems = [r.idem for r in rows]
        streaks = {r.idem: r.error_streak for r in rows}
        results = stored if stored is not None else await self.ledger.results(idems)

        async def one(idem: str) -> None:
            result = results.get(idem)
            if result is None:
                raise SinkError(f"no stored result for {idem}")
            await self.sink.deliver(idem, result)

        outcomes = await self._each(idems, one)
        crashpoint("after_sink_before_consumed")
        now = self.clock.now()
        todo = [
            transitions.sink_failed(idem, streaks.get(idem, 0), out, self.config, now)
            if isinstance(out, BaseException)
            else transitions.delivered(idem, now)
            for idem, out in outcomes
        ]
        report.counts["sink_errors"] += sum(1 for t in todo if t.error)
        await self._apply(todo, report)

    # -- orphans --------------------------------------------------------------------------
    async def recover_orphans(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Settle `reserving` rows whose create may have been sent and whose
        holder is gone: adopt by label where the backend can search, else
        apply the OrphanPolicy. `force` also takes held and not-yet-due rows."""
        report = PassReport()
        seen: set[str] = set()
        while claim := await self._claimed(
            self.ledger.claim_orphans, force=force, idems=idems, exclude=seen
        ):
            seen.update(r.idem for r in claim.rows)
            async with self._holding(claim.rows):
                found = await self._each(claim.rows, self._lookup_one)
            now = self.clock.now()
            todo = [
                transitions.settle_orphan(
                    row,
                    out,
                    self.config,
                    now,
                    force=force,
                    lookup_proves_absence=self.backend.supports_lookup
                    and _holder_gone(row.prev_owner),
                )
                for row, out in found
            ]
            await self._apply(todo, report)
        return report

    async def _lookup_one(self, row: Row) -> RemoteInteraction | None:
        if not self.backend.supports_lookup:
            return None
        return await self.backend.find_by_label(row.idem)

    # -- helpers ----------------------------------------------------------------------------
    async def _claimed(
        self, claim: Callable[..., Awaitable[Claim]], *args: Any, **kw: Any
    ) -> Claim | None:
        """One batch of a named claim under this engine's owner and lease; None when empty."""
        got = await claim(
            self.owner,
            *args,
            limit=self.config.batch_size,
            lease_seconds=self.config.lease_seconds,
            **kw,
        )
        return got if got.rows else None

    async def _apply(self, todo: Sequence[Transition], report: PassReport) -> set[str]:
        """Write back a batch; count only what applied (a pass that lost a
        row's lease reports nothing it did not write). Row errors are reported
        either way: the call failed whether or not its outcome was written."""
        for t in todo:
            if t.error:
                report.error(t.idem, t.error)
        applied = set(await self.ledger.apply(self.owner, self.config.actor, todo))
        for t in todo:
            if t.idem not in applied:
                report.counts["lease_lost"] += 1
            elif t.tally:
                report.counts[t.tally] += 1
        return applied

    async def _disown_late_creates(self, todo: Sequence[Transition], applied: set[str]) -> None:
        """A create that succeeded after this process lost the row's lease
        (it was paused or slow past the lease) belongs to nobody: write it into
        the row's history and ask the API to cancel it."""
        for t in todo:
            handle = t.changes.get("handle")
            if t.to != Status.SUBMITTED or t.idem in applied or not handle:
                continue
            try:
                remote = await self.backend.cancel(handle)
                outcome = f"cancel asked: {remote.api_status}"
            except BackendError as exc:
                outcome = f"cancel failed: {describe(exc)}"
            note = (
                f"late create {handle} by {self.owner} after its lease was lost"
                f" — possible duplicate spend; {outcome}"
            )
            try:
                # A note, not a transition: recorded as a self-loop on the
                # status the row has now (another holder moved it on).
                current = await self.ledger.get(t.idem)
                status = current.status.value if current else None
                await self.ledger.add_event(t.idem, self.config.actor, note, status)
            except Exception as exc:  # the ledger may be what failed us
                log.warning("%s: %s (could not record: %s)", t.idem, note, exc)

    async def _each(
        self, items: Sequence[Any], fn: Callable[[Any], Awaitable[Any]]
    ) -> list[tuple[Any, Any]]:
        """Run fn over items with at most `concurrency` calls in flight (a pool
        of workers, not a task per item: a 2,000-row batch costs 16 tasks);
        an Exception becomes that item's value, nothing else stops the pass."""
        outs: list[Any] = [None] * len(items)
        queue = iter(enumerate(items))

        async def worker() -> None:
            for index, item in queue:
                try:
                    outs[index] = await fn(item)
                except Exception as exc:
                    outs[index] = exc

        workers = min(self.config.concurrency, len(items))
        await asyncio.gather(*(worker() for _ in range(workers)))
        return list(zip(items, outs, strict=True))

    @contextlib.asynccontextmanager
    async def _holding(self, rows: Sequence[Row]) -> AsyncIterator[None]:
        """Renew the batch's leases while it is worked on (a slow batch must not
        lose them); a renewal finding fewer rows just means they were taken."""
        idems = [r.idem for r in rows]
        period = self.config.lease_seconds / 3

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(period)
                await self.ledger.renew(self.owner, idems, self.config.lease_seconds)

        task = asyncio.create_task(heartbeat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def _holder_gone(owner: str | None) -> bool:
    """True when no process can still act on a row this owner held: it let go
    (None), or it is provably dead. A stopped or remote holder may yet send."""
    return owner is None or holder_alive(owner) is False


def _stored(idem: str, result: RemoteInteraction, now: float) -> StoredResult:
    return StoredResult(
        idem, result.id, result.output_text or "", result.usage, result.raw_json(), now
    )
