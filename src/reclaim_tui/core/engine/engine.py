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
import dataclasses
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import cancelling, polling, transitions
from reclaim_tui.core.engine.batching import GroupCommit, HeldBatch, holding
from reclaim_tui.core.engine.circuit import Circuit
from reclaim_tui.core.engine.operator import Operator
from reclaim_tui.core.engine.pacing import AdaptiveLimit
from reclaim_tui.core.engine.transitions import EngineConfig, Transition, describe
from reclaim_tui.core.jobsfile import chain_cycles, cycle_text, key_clash
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.port import Claim, Ledger
from reclaim_tui.core.models import (
    ATTEMPT_LABEL,
    Actor,
    JobSpec,
    OrphanPolicy,
    PassReport,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
    StoredResult,
    labelled_attempt,
)
from reclaim_tui.core.sinks import BatchSink, Sink
from reclaim_tui.errors import (
    BackendError,
    InteractionGoneError,
    JobsFileError,
    LedgerError,
    PermanentReadError,
    SinkError,
)

# OrphanPolicy and PassReport live in models, EngineConfig in transitions;
# re-exported here for the callers that build an engine.
__all__ = ["Engine", "EngineConfig", "OrphanPolicy", "PassReport"]

log = logging.getLogger("reclaim_tui.engine")
T = TypeVar("T")


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
        self.circuit = Circuit(self.config.circuit_threshold)
        self._limit: AdaptiveLimit | None = None

    @property
    def clock(self) -> Clock:
        return self.ledger.clock

    def acting_as(self, actor: Actor) -> Engine:
        """This engine (same ledger, backend, sink, owner and circuit) writing
        its history as `actor`: the console's loop and its operator share one."""
        twin = Engine(
            self.ledger,
            self.backend,
            self.sink,
            config=dataclasses.replace(self.config, actor=actor),
            owner=self.owner,
        )
        twin.circuit = self.circuit
        twin._limit = self.limit
        return twin

    @property
    def operator(self) -> Operator:
        """Operator actions (retry, cancel, adopt, replay by key) on this engine's ledger."""
        return Operator(self)

    # -- the whole tick ------------------------------------------------------------
    async def tick(self, jobs: Sequence[JobSpec] = ()) -> PassReport:
        """One cron pass: recover orphans, reserve new jobs, send, reclaim, replay."""
        report = PassReport()
        self.circuit.next_pass()
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

    async def submit(self, jobs: Sequence[JobSpec], *, send: bool = True) -> PassReport:
        """Reserve rows for new jobs (existing keys are left alone), then send."""
        report = PassReport()
        await self._refuse_key_clashes(jobs)
        rows = [(idempotency_key(j), j.to_json(), j.target) for j in jobs]
        if any(j.previous is not None for j in jobs):
            await self._refuse_cycles(jobs, [r[0] for r in rows])
        inserted, present = await self.ledger.insert_jobs(rows, self.config.actor)
        report.counts["inserted"] += len(inserted)
        report.counts["already_present"] += len(present)
        crashpoint("after_reserve_commit")
        if send:
            report.merge(await self.send_reserved())
        return report

    async def _refuse_cycles(self, jobs: Sequence[JobSpec], keys: Sequence[str]) -> None:
        """Refuse (JobsFileError, exit 3; nothing reserved) new jobs whose
        `previous` chain comes back to them, through these jobs or the rows
        already in the ledger: such a job waits for itself and never runs.
        A key already in the ledger keeps its stored spec, so its chain is
        the stored one."""
        stored = await self.ledger.get_many(list(dict.fromkeys(keys)))
        previous_of: dict[str, str | None] = {}
        for key, job in zip(keys, jobs, strict=True):
            previous_of.setdefault(
                key, _stored_previous(stored[key]) if key in stored else job.previous
            )
        # Follow each chain into the ledger, a round of lookups per step.
        wanted = {p for p in previous_of.values() if p is not None} - previous_of.keys()
        for _ in range(1000):
            if not wanted:
                break
            found = await self.ledger.get_many(sorted(wanted))
            for key in wanted:
                previous_of[key] = _stored_previous(found[key]) if key in found else None
            wanted = {p for p in previous_of.values() if p is not None} - previous_of.keys()
        new = [k for k in dict.fromkeys(keys) if k not in stored]
        cycles = chain_cycles(previous_of, new)
        if cycles:
            position = {k: n for n, k in reversed(list(enumerate(keys, start=1)))}
            problems = [
                (0, f"job {position[key]} of {len(keys)}: {cycle_text(cycle)}")
                for key, cycle in cycles.items()
            ]
            raise JobsFileError("the jobs submitted", problems)

    async def _refuse_key_clashes(self, jobs: Sequence[JobSpec]) -> None:
        """A job's own key already in the ledger for another spec would be
        `already_present` and the new job never run: refused, nothing reserved."""
        keyed = {j.key: j for j in jobs if j.key is not None}
        if not keyed:
            return
        stored = await self.ledger.get_many(list(keyed))
        problems = [
            (0, why)
            for key, row in stored.items()
            if (why := key_clash(row.job, keyed[key])) is not None
        ]
        if problems:
            raise JobsFileError("jobs", problems)

    # -- sending -----------------------------------------------------------------------
    async def send_reserved(self) -> PassReport:
        """Create an interaction for every due `reserving` row not in flight.

        Each row's attempt is committed just before its own create is sent and
        its handle as soon as the answer arrives (group commit across answers
        that arrive together): after a kill, only the creates in flight
        (≤ concurrency) have an unknown outcome, and a row whose create was
        never sent is left as it was.
        """
        report = PassReport()
        while not self.circuit.open and (
            claim := await self._claimed(self.ledger.claim_sendable, limit=self._flight())
        ):
            commit = GroupCommit(self.ledger, self.owner, self.config.actor)
            late: list[tuple[Row, str]] = []
            created: list[str] = []
            send = functools.partial(
                self._send_one, commit=commit, late=late, created=created, report=report
            )
            async with self._hold(claim) as batch:
                outcomes = await self._each(claim.rows, send, batch)
            # `_send_one` keeps the API's failures in their rows: what comes
            # out of it is the ledger (or this program) failing a row's step.
            failed = [(row, out) for row, out in outcomes if isinstance(out, Exception)]
            await self._settle_late_creates(late, report)
            if self.config.webhooks and created:
                # A fast job's event can beat its create's answer: poll those now.
                report.counts["woken"] += await inbox.wake(self.ledger, created, self.clock.now())
            if failed:
                raise _pass_failed(failed, self._noted(report))
        return self._noted(report)

    async def _send_one(
        self,
        row: Row,
        *,
        commit: GroupCommit,
        late: list[tuple[Row, str]],
        created: list[str],
        report: PassReport,
    ) -> None:
        job = row.job
        if job.previous is not None:
            # A chain: sent only once the job it continues is done, as a
            # follow-up of that job's interaction.
            previous = await self.ledger.get(job.previous)
            hold = transitions.before_chain(row, previous, self.config, self.clock.now())
            if hold is not None:
                await self._commit_one(commit, hold, report)
                return
            assert previous is not None and previous.handle is not None
            config = {**job.config, "previous_interaction_id": previous.handle}
            job = dataclasses.replace(job, config=config)
        sending = await commit.mark_sending(row.idem)
        if sending is None:
            report.counts["lease_lost"] += 1
            return
        # The create names its attempt too (issue 22): recovery adopts only an
        # interaction made for the row's current attempt.
        labels = {**job.labels, ATTEMPT_LABEL: sending.attempt_tag or ""}
        job = dataclasses.replace(job, labels=labels)
        crashpoint("before_create")
        out = await self._outcome(self.backend.create(job, sending.idem))
        self.circuit.record(out)
        crashpoint("after_create_before_handle")
        t = transitions.after_create(sending, out, self.config, self.clock.now())
        handle = t.changes.get("handle")
        if not await self._commit_one(commit, t, report):
            if handle:
                late.append((sending, handle))
        elif handle:
            created.append(handle)
        crashpoint("after_handle_commit")

    async def _commit_one(self, commit: GroupCommit, t: Transition, report: PassReport) -> bool:
        if t.error:
            report.error(t.idem, t.error)
        applied = await commit.apply(t)
        if not applied:
            report.counts["lease_lost"] += 1
        elif t.tally:
            report.counts[t.tally] += 1
        return applied

    @staticmethod
    async def _outcome(call: Awaitable[T]) -> T | Exception:
        try:
            return await call
        except Exception as exc:  # rule 7: the row's outcome, not the pass's
            return exc

    # -- reclaiming -------------------------------------------------------------------
    async def reclaim(self) -> PassReport:
        """Poll every due `submitted` row; store and deliver what completed."""
        report = PassReport()
        while not self.circuit.open and (
            claim := await self._claimed(self.ledger.claim_pollable, limit=self._flight())
        ):
            async with self._hold(claim) as batch:
                outcomes = await self._each(claim.rows, self._get_one, batch)
                report.counts["polled"] += len(outcomes)
                crashpoint("after_fetch_before_done")
                now = self.clock.now()
                todo = [polling.after_poll(r, o, self.config, now) for r, o in outcomes]
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
                    await self._deliver(done, report, batch, stored)
        return self._noted(report)

    async def _get_one(self, row: Row) -> RemoteInteraction | polling.Overdue | Exception:
        assert row.handle is not None, "submitted rows always have a handle"
        out = await self._outcome(self.backend.get(row.handle))
        self.circuit.record(out)
        if not isinstance(out, RemoteInteraction):
            return out
        deadline = polling.overdue(row, out, self.config, self.clock.now())
        if deadline is None:
            return out
        # Past its deadline: cancel it, and keep whatever it produced so far.
        cancelled = await self._outcome(self.backend.cancel(row.handle))
        self.circuit.record(cancelled)
        return polling.Overdue(out, deadline, cancelled)

    # -- cancels the API has not confirmed (core/engine/cancelling.py) -------------------------
    async def confirm_cancels(self) -> PassReport:
        """Ask the API again to cancel the rows whose remote cancel failed."""
        report = PassReport()
        claim_pending = self.ledger.claim_cancel_pending
        while not self.circuit.open and (claim := await self._claimed(claim_pending)):
            async with self._hold(claim) as batch:
                outcomes = await self._each(claim.rows, self._cancel_one, batch)
                now = self.clock.now()
                todo = [cancelling.after_remote_cancel(r, o, self.config, now) for r, o in outcomes]
                await self._apply(todo, report)
        return self._noted(report)

    async def _cancel_one(self, row: Row) -> RemoteInteraction | Exception:
        handle = row.handle or ""
        out = await self._outcome(self.backend.cancel(handle))
        self.circuit.record(out)
        if isinstance(out, PermanentReadError):
            # The API refuses to cancel a finished interaction: one that
            # completed keeps its paid result (after_remote_cancel).
            look = await self._outcome(self.backend.get(handle))
            if isinstance(look, RemoteInteraction) and look.state == RemoteState.COMPLETED:
                return look
        return out

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
            async with self._hold(claim) as batch:
                await self._deliver(claim.rows, report, batch)
        return report

    async def _deliver(
        self,
        rows: Sequence[Row],
        report: PassReport,
        batch: HeldBatch,
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

        outcomes: Sequence[tuple[str, Any]]
        if isinstance(self.sink, BatchSink):
            outcomes = await self._deliver_many(self.sink, idems, results, batch)
        else:
            outcomes = await self._each(idems, one, batch, key=lambda idem: idem, calls_api=False)
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

    @staticmethod
    async def _deliver_many(
        sink: BatchSink,
        idems: Sequence[str],
        results: Mapping[str, StoredResult],
        batch: HeldBatch,
    ) -> list[tuple[str, BaseException | None]]:
        """The whole batch to a sink that makes it durable at once (fewer
        flushes); rows whose lease was lost are left out, as in `_each`."""
        outcomes: list[tuple[str, BaseException | None]] = []
        items: list[tuple[str, StoredResult]] = []
        for idem in idems:
            if not batch.holds(idem):
                continue
            batch.started.add(idem)
            result = results.get(idem)
            if result is None:
                outcomes.append((idem, SinkError(f"no stored result for {idem}")))
            else:
                items.append((idem, result))
        if items:
            try:
                delivered = await sink.deliver_many(items)
            except Exception as exc:  # rule 7: the rows' outcome, not the pass's
                delivered = [exc] * len(items)
            outcomes.extend(zip((idem for idem, _ in items), delivered, strict=True))
        return outcomes

    # -- orphans --------------------------------------------------------------------------
    async def recover_orphans(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Settle `reserving` rows whose create may have been sent and whose
        holder is gone: adopt by label where the backend can search, else
        apply the OrphanPolicy. `force` also takes held and not-yet-due rows."""
        report = PassReport()
        seen: set[str] = set()
        while not self.circuit.open and (
            claim := await self._claimed(
                self.ledger.claim_orphans, force=force, idems=idems, exclude=seen
            )
        ):
            seen.update(r.idem for r in claim.rows)
            async with self._hold(claim) as batch:
                found = await self._each(
                    claim.rows, self._lookup_one, batch, calls_api=self.backend.supports_lookup
                )
            now = self.clock.now()
            looked_up = self.backend.supports_lookup or self.config.webhooks
            todo = [
                transitions.settle_orphan(
                    row, out, self.config, now, force=force, looked_up=looked_up, via=via
                )
                for row, (out, via) in found
            ]
            await self._apply(todo, report)
        if self.config.webhooks and not force and not self.circuit.open:
            named = await inbox.held_named(self.ledger)
            if named:
                # Held before their event came: the event is the proof an
                # operator would look for, so they are adopted now.
                report.merge(await self.recover_orphans(force=True, idems=named))
        return self._noted(report)

    async def _lookup_one(self, row: Row) -> tuple[RemoteInteraction | Exception | None, str]:
        """The interaction an orphan's create made, if it can be found: one an
        inbox event named the job by, confirmed (webhooks), else the backend's
        label lookup. Only one labelled with the row's current attempt: the
        job's key also names the interactions of its earlier attempts (the
        failed one an operator retried) and of a pruned job whose key a new
        job took; adopting one of those is a wrong result or a paid one never
        collected (issue 22). A row whose attempt has no send time (written
        before migration 3) has no attempt label to look for: nothing is
        found, and the orphan policy applies."""
        attempt = row.attempt_tag
        if attempt is None:
            return None, "label"
        if self.config.webhooks:
            try:
                found = await self._confirmed_event(row)
            except Exception as exc:  # rule 7: the row's outcome (looked at again later)
                return exc, "webhook inbox"
            if found is not None:
                return found
        if not self.backend.supports_lookup:
            return None, "label"
        out = await self._outcome(self.backend.find_by_label(row.idem, attempt))
        self.circuit.record(out)
        if isinstance(out, RemoteInteraction) and not _made_for(out, row.idem, attempt):
            log.warning(
                "%s: the label lookup found %s, not made for attempt %s: not adopted",
                row.idem,
                out.id,
                attempt,
            )
            return None, "label"
        return out, "label"

    async def _confirmed_event(self, row: Row) -> tuple[RemoteInteraction, str] | None:
        """The newest interaction an event named this job by that the API
        confirms: it exists and is labelled for this job and its current
        attempt. A 404 or another job's or attempt's label skips the event
        (replayed, mis-routed, stale, or gone since); any other failure is
        raised (the orphan is looked at again later)."""
        for event in await inbox.named(self.ledger, row.idem):
            assert event.interaction is not None
            out = await self._outcome(self.backend.get(event.interaction))
            self.circuit.record(out)
            if isinstance(out, InteractionGoneError):
                continue
            if isinstance(out, Exception):
                raise out
            if _made_for(out, row.idem, row.attempt_tag):
                return out, f"webhook event {event.webhook_id}"
            log.warning(
                "inbox event %s names %s for job %s attempt %s, but the API labels it %r: skipped",
                event.webhook_id,
                event.interaction,
                row.idem,
                row.attempt_tag,
                (out.raw or {}).get("labels"),
            )
        return None

    # -- helpers ----------------------------------------------------------------------------
    def _noted(self, report: PassReport) -> PassReport:
        """Say in the report when the circuit breaker stopped calling the API,
        or when every call of the pass failed for a cause outside the jobs."""
        tripped = self.circuit.tripped or self.circuit.refused_everything()
        if tripped is not None:
            report.unavailable = (tripped.cause or "unknown", describe(tripped))
        return report

    def _hold(self, claim: Claim) -> contextlib.AbstractAsyncContextManager[HeldBatch]:
        return holding(
            self.ledger, self.owner, [r.idem for r in claim.rows], self.config.lease_seconds
        )

    def _flight(self) -> int:
        """Rows a pass that calls the API claims at a time: what this process
        can have in flight (its concurrency, as paced now), at most a batch.
        A process that claimed the whole batch (500) sent every create while
        other hosts idled, and when it died nothing was sent for a lease
        (issue 23); now the hosts share the work, and a dead one delays only
        the rows it had in flight."""
        return max(1, min(self.config.batch_size, self.limit.current))

    async def _claimed(
        self,
        claim: Callable[..., Awaitable[Claim]],
        *args: Any,
        limit: int | None = None,
        **kw: Any,
    ) -> Claim | None:
        """One batch of a named claim under this engine's owner and lease
        (`limit` rows, a whole batch by default); None when empty."""
        got = await claim(
            self.owner,
            *args,
            limit=self.config.batch_size if limit is None else limit,
            lease_seconds=self.config.lease_seconds,
            **kw,
        )
        if not got.rows:
            return None
        warm = getattr(self.backend, "warm", None)
        if warm is not None:
            await warm()  # the SDK's first import, before any attempt is committed
        return got

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

    async def _settle_late_creates(
        self, late: Sequence[tuple[Row, str]], report: PassReport
    ) -> None:
        """Creates answered after this process lost the row's lease (it was
        paused or slow past the lease). Where the row is still an orphan and
        its lease is free, a fresh claim takes it back and the create becomes
        its handle. Otherwise nothing is written (the lease is gone), and the
        create is cancelled only when the row provably holds another
        interaction (or none will ever be needed): never the one the row holds,
        never one that recovery may still adopt."""
        if not late:
            return
        handles = dict((row.idem, handle) for row, handle in late)
        attempts = {row.idem: row.attempt_tag for row, _ in late}
        claim = await self.ledger.claim_orphans(
            self.owner,
            limit=len(handles),
            lease_seconds=self.config.lease_seconds,
            force=True,
            idems=list(handles),
        )
        now = self.clock.now()
        # Only while the row is still at the attempt this create was sent
        # for: a later attempt (a resend, a follow-up turn) is not this one's.
        current = [
            r
            for r in claim.rows
            if r.status == Status.RESERVING and r.attempt_tag == attempts[r.idem]
        ]
        await self.ledger.release(self.owner, [r.idem for r in claim.rows if r not in current])
        adopted = await self._apply(
            [transitions.late_create_adopted(r, handles[r.idem], now) for r in current], report
        )
        for idem, handle in handles.items():
            if idem not in adopted:
                await self._record_late_create(idem, handle)

    async def _record_late_create(self, idem: str, handle: str) -> None:
        # A process without the lease writes nothing (issue 10): the row's new
        # holder already recorded the resend as a possible duplicate. This
        # create is provably ours; it is cancelled only when the row holds
        # another interaction or is settled, and said in our own log.
        try:
            current = await self.ledger.get(idem)
        except Exception as exc:  # the ledger may be what failed us
            log.warning("%s: late create %s, row unreadable: %s", idem, handle, exc)
            return
        if current is None or current.handle == handle or current.status == Status.RESERVING:
            log.warning("%s: late create %s after the lease was lost; left as is", idem, handle)
            return
        outcome = await self._cancel_note(handle)
        log.warning(
            "%s: late create %s after the lease was lost, a duplicate of %s; %s",
            idem,
            handle,
            current.handle or current.status.value,
            outcome,
        )

    async def _cancel_note(self, handle: str) -> str:
        try:
            remote = await self.backend.cancel(handle)
        except BackendError as exc:
            return f"cancel failed: {describe(exc)}"
        return f"cancel asked: {remote.api_status}"

    async def _each(
        self,
        items: Sequence[Any],
        fn: Callable[[Any], Awaitable[Any]],
        batch: HeldBatch,
        key: Callable[[Any], str] = lambda row: str(row.idem),
        *,
        calls_api: bool = True,
    ) -> list[tuple[Any, Any]]:
        """Run fn over items with at most `concurrency` calls in flight (a pool
        of workers, not a task per item: a 2,000-row batch costs 16 tasks);
        an Exception becomes that item's value, nothing else stops the pass.
        An item whose lease this process lost is not started and not returned."""
        outs: dict[int, Any] = {}
        queue = iter(enumerate(items))
        # Until one call comes back without an outside failure, calls go one
        # at a time (circuit.py): the first worker probes, the others wait
        # for it to warm the circuit, open it, or run out of items.
        go = asyncio.Event()
        if not calls_api or self.circuit.warm:
            go.set()
        limit = self.limit if calls_api else None
        if limit is not None:
            limit.begin_pass()
        tasks: list[asyncio.Task[None]] = []

        async def worker(n: int) -> None:
            if n > 0:
                await go.wait()
            try:
                for index, item in queue:
                    if not batch.holds(key(item)) or (calls_api and self.circuit.open):
                        continue
                    batch.started.add(key(item))
                    started = time.perf_counter()
                    try:
                        outs[index] = await fn(item)
                    except Exception as exc:
                        outs[index] = exc
                    if self.circuit.warm or self.circuit.open:
                        go.set()
                    if limit is not None and _paced(limit, outs[index], started, tasks, spawn):
                        return  # the limit shrank below this worker
            finally:
                go.set()

        def spawn() -> None:
            tasks.append(asyncio.create_task(worker(len(tasks))))

        first = self.config.concurrency if limit is None else limit.current
        for _ in range(min(first, len(items))):
            spawn()
        # Workers may spawn more while they run (the limit grew): gather them all.
        while pending := [t for t in tasks if not t.done()]:
            await asyncio.gather(*pending)
        return [(items[i], outs[i]) for i in sorted(outs)]

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


def _paced(
    limit: AdaptiveLimit,
    out: Any,
    started: float,
    tasks: list[asyncio.Task[None]],
    spawn: Callable[[], None],
) -> bool:
    """Tell the limit about one call; spawn the workers it now allows. True
    when the calling worker is above the limit and must stop."""
    cause = out.cause if isinstance(out, BackendError) else None
    target = limit.observe(time.perf_counter() - started, cause)
    while len(tasks) < target:
        spawn()
    me = asyncio.current_task()
    index = next((i for i, t in enumerate(tasks) if t is me), 0)
    return index >= target


def _stored_previous(row: Row) -> str | None:
    """The key a stored row continues (None for a spec that is not readable)."""
    try:
        return row.job.previous
    except (ValueError, KeyError, TypeError):
        return None


def _pass_failed(failed: Sequence[tuple[Row, Exception]], report: PassReport) -> Exception:
    """The error that ends a pass whose rows' steps the ledger refused: each
    row named in the report (`report` on the error, for the CLI's document),
    the first error's class kept (a server out of reach is waited for by
    `run`). Never swallowed: a pass that did not do what it claimed exits
    non-zero (issue 23: `sent=2`, `errors: []`, exit 0, 3 rows stranded)."""
    for row, exc in failed:
        report.error(row.idem, f"not sent, the ledger failed: {exc}")
    first = failed[0][1]
    if not isinstance(first, LedgerError):
        return first
    error = type(first)(f"{first} ({len(failed)} row(s) of the pass not sent or not recorded)")
    error.report = report
    return error


def _made_for(found: RemoteInteraction, idem: str, attempt: str | None) -> bool:
    """Whether the API labels `found` as made for this job's attempt."""
    labels = (found.raw or {}).get("labels") or {}
    return bool(labels.get("idem") == idem and attempt and labelled_attempt(found.raw) == attempt)


def _stored(idem: str, result: RemoteInteraction, now: float) -> StoredResult:
    return StoredResult(
        idem, result.id, result.output_text or "", result.usage, result.raw_json(), now
    )
