"""The engine: submit, send, reclaim, replay, recover and operator actions,
over two ports (a Backend and a Sink) and the ledger.

Every pass works in batches: one `UPDATE … RETURNING` claims a batch under a
lease, the API calls of the batch run concurrently under a semaphore, and the
outcomes are written back in one compare-and-set transaction. Errors stay in
their row (DESIGN rule 7): nothing one row does stops the pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import Ledger, Transition
from reclaim_tui.core.models import (
    Actor,
    JobSpec,
    OrphanPolicy,
    PassReport,
    RemoteInteraction,
    RemoteState,
    Row,
    Status,
    StoredResult,
)
from reclaim_tui.core.owner import holder_alive, this_process
from reclaim_tui.core.sinks import Sink
from reclaim_tui.errors import (
    BackendError,
    InteractionGoneError,
    NotCreatedError,
    OperatorError,
    SinkError,
)

# OrphanPolicy and PassReport live in models; re-exported for existing imports.
__all__ = ["Engine", "EngineConfig", "OrphanPolicy", "PassReport"]

log = logging.getLogger("reclaim_tui.engine")


@dataclass(frozen=True, slots=True)
class EngineConfig:
    concurrency: int = 16
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

    def backoff(self, n: int) -> float:
        """Delay before the n-th retry (n ≥ 1): exponential, capped."""
        return float(min(self.backoff_cap, self.backoff_base * 2 ** max(0, n - 1)))

    def next_poll(self, submitted_at: float, polls: int, now: float) -> float:
        """When to poll next, after `polls` polls of a job submitted at `submitted_at`.

        Polls sit on a fixed grid of ages — first_poll · 2^k (2, 4, 8, 16 … s) —
        rather than "now + age", so a late tick does not push every later poll
        further out: a job of duration d is seen done by age 2·d at most, after
        ⌈log2(d / first_poll)⌉ + 1 polls. Past the cap, polls come every poll_cap.
        """
        if self.first_poll <= 0:
            return now
        age = now - submitted_at
        exponent = polls
        if age >= self.first_poll * 2.0 ** min(exponent, 40):
            # That grid point has passed (a late tick): take the first one
            # after now, never "due at once", or a late row is polled twice.
            exponent = math.floor(math.log2(age / self.first_poll)) + 1
        target = submitted_at + self.first_poll * 2.0 ** min(exponent, 40)
        return min(target, now + self.poll_cap)


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
        while True:
            claim = await self.ledger.claim(
                self.owner,
                "status = 'reserving' AND inflight = 0 AND held = 0 AND next_at <= ?",
                [self.clock.now()],
                limit=self.config.batch_size,
                lease_seconds=self.config.lease_seconds,
                # Rule 3, attempt before call: committed before create is sent.
                set_sql="attempts = attempts + 1, inflight = 1",
                event=(self.config.actor, "attempt {attempts}: sending create"),
            )
            if not claim.rows:
                return report
            crashpoint("before_create")
            async with self._holding(claim.rows):
                outcomes = await self._each(claim.rows, self._create_one)
            crashpoint("after_create_before_handle")
            transitions = [self._after_create(row, out, report) for row, out in outcomes]
            applied = await self._apply(transitions, report)
            crashpoint("after_handle_commit")
            await self._disown_late_creates(transitions, applied)

    async def _create_one(self, row: Row) -> RemoteInteraction:
        return await self.backend.create(row.job, row.idem)

    def _after_create(
        self, row: Row, out: RemoteInteraction | BaseException, report: PassReport
    ) -> Transition:
        now = self.clock.now()
        if isinstance(out, RemoteInteraction):
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.SUBMITTED,
                f"created {out.id} (attempt {row.attempts})",
                {
                    "handle": out.id,
                    "inflight": 0,
                    "submitted_at": now,
                    "error_streak": 0,
                    "next_at": now + self.config.first_poll,
                    "last_error": None,
                },
                tally="sent",
            )
        message = _describe(out)
        report.error(row.idem, message)
        if not isinstance(out, NotCreatedError):
            # MaybeCreatedError, or anything unexpected: the request may have
            # left, so the outcome is unknown and the attempt stays in flight.
            # Stays in flight: recovery adopts it by label or applies the policy.
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.RESERVING,
                f"attempt {row.attempts}: outcome unknown ({message})",
                {"next_at": now + self.config.backoff(row.attempts), "last_error": message},
                tally="maybe_created",
            )
        retryable = out.retryable
        if not retryable or row.attempts >= self.config.max_attempts:
            why = "not retryable" if not retryable else f"{row.attempts} attempts"
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.FAILED,
                f"create failed ({why}): {message}",
                {"inflight": 0, "last_error": f"create failed ({why}): {message}"},
                tally="failed",
            )
        return Transition(
            row.idem,
            Status.RESERVING,
            Status.RESERVING,
            f"attempt {row.attempts} not created: {message}; retry later",
            {
                "inflight": 0,
                "next_at": now + self.config.backoff(row.attempts),
                "last_error": message,
            },
        )

    # -- reclaiming -------------------------------------------------------------------
    async def reclaim(self) -> PassReport:
        """Poll every due `submitted` row; store and deliver what completed."""
        report = PassReport()
        while True:
            claim = await self.ledger.claim(
                self.owner,
                "status = 'submitted' AND next_at <= ?",
                [self.clock.now()],
                limit=self.config.batch_size,
                lease_seconds=self.config.lease_seconds,
            )
            if not claim.rows:
                return report
            async with self._holding(claim.rows):
                outcomes = await self._each(claim.rows, self._get_one)
                report.counts["polled"] += len(outcomes)
                crashpoint("after_fetch_before_done")
                transitions = [self._after_poll(row, out, report) for row, out in outcomes]
                applied = await self._apply(transitions, report)
                # Deliver exactly what was just committed with `done` (the same
                # values, not a second read of them).
                now = self.clock.now()
                stored = {
                    t.idem: _stored(t.idem, t.result, now)
                    for t in transitions
                    if t.to == Status.DONE and t.result is not None and t.idem in applied
                }
                done = [row for row in claim.rows if row.idem in stored]
                crashpoint("after_done_before_sink")
                if done:
                    await self._deliver(done, report, stored)

    async def _get_one(self, row: Row) -> RemoteInteraction:
        assert row.handle is not None, "submitted rows always have a handle"
        return await self.backend.get(row.handle)

    def _after_poll(
        self, row: Row, out: RemoteInteraction | BaseException, report: PassReport
    ) -> Transition:
        now = self.clock.now()
        base = {"polls": row.polls + 1}
        if isinstance(out, RemoteInteraction):
            return self._after_state(row, out, base, report)
        message = _describe(out)
        report.error(row.idem, message)
        if isinstance(out, InteractionGoneError):
            if row.attempts >= self.config.max_attempts:
                return Transition(
                    row.idem,
                    Status.SUBMITTED,
                    Status.FAILED,
                    f"interaction {row.handle} gone (404) and attempts exhausted",
                    {**base, "last_error": f"interaction {row.handle} gone (404)"},
                    tally="failed",
                )
            # The provider dropped it before we stored a result: send it again.
            return Transition(
                row.idem,
                Status.SUBMITTED,
                Status.RESERVING,
                f"interaction {row.handle} gone (404) before its result was stored; resubmitting",
                {
                    **base,
                    "handle": None,
                    "inflight": 0,
                    "next_at": now,
                    "last_error": f"interaction {row.handle} gone (404)",
                },
                tally="gone",
            )
        streak = row.error_streak + 1
        if streak >= self.config.max_read_errors:
            return Transition(
                row.idem,
                Status.SUBMITTED,
                Status.FAILED,
                f"gave up after {streak} read errors: {message}",
                {**base, "error_streak": streak, "last_error": message},
                tally="failed",
            )
        return Transition(
            row.idem,
            Status.SUBMITTED,
            Status.SUBMITTED,
            f"poll error: {message}",
            {
                **base,
                "error_streak": streak,
                "last_error": message,
                "next_at": now + self.config.backoff(streak),
            },
        )

    def _after_state(
        self, row: Row, out: RemoteInteraction, base: dict[str, Any], report: PassReport
    ) -> Transition:
        now = self.clock.now()
        if out.state == RemoteState.COMPLETED:
            return Transition(
                row.idem,
                Status.SUBMITTED,
                Status.DONE,
                f"completed; result of {out.id} stored",
                {**base, "done_at": now, "last_error": None, "error_streak": 0, "next_at": now},
                result=out,
                release=False,
                tally="completed",
            )
        if out.state in (RemoteState.FAILED, RemoteState.CANCELLED):
            to = Status.CANCELLED if out.state == RemoteState.CANCELLED else Status.FAILED
            reason = f"API status {out.api_status}" + (f": {out.error}" if out.error else "")
            return Transition(
                row.idem,
                Status.SUBMITTED,
                to,
                reason,
                {**base, "last_error": reason},
                tally=to.value,
            )
        next_at = self.config.next_poll(row.submitted_at or now, row.polls + 1, now)
        changes = {**base, "error_streak": 0, "next_at": next_at}
        if out.state == RemoteState.UNKNOWN:
            note = f"unknown API status {out.api_status!r}; still polling"
            changes["last_error"] = note
            return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, note, changes)
        if row.last_error:
            changes["last_error"] = None
        return Transition(row.idem, Status.SUBMITTED, Status.SUBMITTED, "", changes)

    # -- replay and delivery ------------------------------------------------------------
    async def replay(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Deliver stored results of `done` rows whose side effect did not finish.

        `force` also takes rows whose sink back-off has not run out (an
        operator's "replay now"); each row is tried at most once per call.
        """
        report = PassReport()
        where = "status = 'done'"
        params: list[Any] = []
        if not force:
            where += " AND next_at <= ?"
            params.append(self.clock.now())
        if idems is not None:
            where += " AND idem IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(list(idems)))
        seen: list[str] = []
        while True:
            claim = await self.ledger.claim(
                self.owner,
                where + " AND idem NOT IN (SELECT value FROM json_each(?))",
                [*params, json.dumps(seen)],
                limit=self.config.batch_size,
                lease_seconds=self.config.lease_seconds,
            )
            if not claim.rows:
                return report
            seen.extend(r.idem for r in claim.rows)
            report.counts["replayed"] += len(claim.rows)
            async with self._holding(claim.rows):
                await self._deliver(claim.rows, report)

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
        if stored is None:
            stored = await self.ledger.results(idems)

        async def one(idem: str) -> None:
            result = stored.get(idem)
            if result is None:
                raise SinkError(f"no stored result for {idem}")
            await self.sink.deliver(idem, result)

        outcomes = await self._each(idems, one)
        crashpoint("after_sink_before_consumed")
        now = self.clock.now()
        transitions = []
        for idem, out in outcomes:
            if isinstance(out, BaseException):
                message = _describe(out)
                report.error(idem, message)
                report.counts["sink_errors"] += 1
                streak = streaks.get(idem, 0) + 1
                transitions.append(
                    Transition(
                        idem,
                        Status.DONE,
                        Status.DONE,
                        f"sink failed: {message}",
                        {
                            "last_error": message,
                            "error_streak": streak,
                            "next_at": now + self.config.backoff(streak),
                        },
                    )
                )
            else:
                transitions.append(
                    Transition(
                        idem,
                        Status.DONE,
                        Status.CONSUMED,
                        "sink delivered",
                        {"consumed_at": now, "last_error": None, "error_streak": 0},
                        tally="consumed",
                    )
                )
        await self._apply(transitions, report)

    # -- orphans --------------------------------------------------------------------------
    async def recover_orphans(
        self, *, force: bool = False, idems: Sequence[str] | None = None
    ) -> PassReport:
        """Settle `reserving` rows whose create may have been sent and whose
        holder is gone: adopt by label where the backend can search, else
        apply the OrphanPolicy. `force` also takes held and not-yet-due rows."""
        report = PassReport()
        where = "status = 'reserving' AND inflight = 1"
        params: list[Any] = []
        if not force:
            where += " AND held = 0 AND next_at <= ?"
            params.append(self.clock.now())
        if idems is not None:
            where += " AND idem IN (SELECT value FROM json_each(?))"
            params.append(json.dumps(list(idems)))
        seen: set[str] = set()
        while True:
            claim = await self.ledger.claim(
                self.owner,
                where + " AND idem NOT IN (SELECT value FROM json_each(?))",
                [*params, json.dumps(sorted(seen))],
                limit=self.config.batch_size,
                lease_seconds=self.config.lease_seconds,
            )
            if not claim.rows:
                return report
            seen.update(r.idem for r in claim.rows)
            async with self._holding(claim.rows):
                found = await self._each(claim.rows, self._lookup_one)
            transitions = [self._settle_orphan(r, f, force, report) for r, f in found]
            await self._apply(transitions, report)

    async def _lookup_one(self, row: Row) -> RemoteInteraction | None:
        if not self.backend.supports_lookup:
            return None
        return await self.backend.find_by_label(row.idem)

    def _settle_orphan(
        self,
        row: Row,
        found: RemoteInteraction | BaseException | None,
        force: bool,
        report: PassReport,
    ) -> Transition:
        now = self.clock.now()
        if isinstance(found, BaseException):
            message = _describe(found)
            report.error(row.idem, message)
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.RESERVING,
                f"orphan lookup failed: {message}",
                {"last_error": message, "next_at": now + self.config.backoff(1)},
            )
        if found is not None:
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.SUBMITTED,
                f"orphan adopted: {found.id} found by label",
                {
                    "handle": found.id,
                    "inflight": 0,
                    "held": 0,
                    "submitted_at": now,
                    "next_at": now,
                    "last_error": None,
                },
                tally="adopted",
            )
        if self.config.orphan_policy == OrphanPolicy.HOLD and not force:
            if row.held:
                return Transition(row.idem, Status.RESERVING, Status.RESERVING, "", {})
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.RESERVING,
                "orphan held for an operator (policy=hold)",
                {"held": 1, "last_error": "orphan: outcome of create unknown"},
                tally="held",
            )
        if row.attempts >= self.config.max_attempts and not force:
            why = f"outcome of {row.attempts} attempts unknown; attempts exhausted"
            return Transition(
                row.idem,
                Status.RESERVING,
                Status.FAILED,
                why,
                {"inflight": 0, "held": 0, "last_error": why},
                tally="failed",
            )
        if self.backend.supports_lookup and _holder_gone(row.prev_owner):
            # The backend searched and found nothing, and nobody can still be
            # sending that attempt (its holder released it or is provably
            # dead): the create never landed.
            note = f"orphan: attempt {row.attempts} not found by label; sending again"
            changes: dict[str, Any] = {"inflight": 0, "held": 0, "next_at": now}
        else:
            note = (
                f"orphan: outcome of attempt {row.attempts} unknown; resubmitting"
                " — possible duplicate spend"
            )
            changes = {"inflight": 0, "held": 0, "next_at": now, "duplicates": row.duplicates + 1}
        return Transition(
            row.idem, Status.RESERVING, Status.RESERVING, note, changes, tally="resubmitted"
        )

    # -- operator actions --------------------------------------------------------------------
    async def retry(self, idem: str, *, actor: Actor = Actor.CLI) -> Row:
        """Send a failed or cancelled job again, with a fresh attempt budget."""
        before = await self._require(idem)
        note = f"operator retry (was {before.status}"
        note += f": {before.last_error})" if before.last_error else ")"
        if before.handle:
            note += f"; previous interaction {before.handle}"
        return await self._operator(
            idem,
            (Status.FAILED, Status.CANCELLED),
            Status.RESERVING,
            actor,
            note,
            {
                "attempts": 0,
                "inflight": 0,
                "held": 0,
                "error_streak": 0,
                "handle": None,
                "next_at": self.clock.now(),
                "last_error": None,
            },
        )

    async def cancel(self, idem: str, *, actor: Actor = Actor.CLI) -> Row:
        """Cancel a job that has not finished; asks the API to cancel too.

        An orphan (a create whose outcome is unknown) may have an interaction
        running: it is looked up by label and cancelled where the backend can
        search; elsewhere the row records the possible spend.
        """
        before = await self._require(idem)
        orphan = before.status == Status.RESERVING and before.inflight
        changes: dict[str, Any] = {"held": 0}
        note = "operator cancel"
        if orphan and not self.backend.supports_lookup:
            changes["duplicates"] = before.duplicates + 1
            note += f"; outcome of attempt {before.attempts} unknown — possible duplicate spend"
        row = await self._operator(
            idem, (Status.RESERVING, Status.SUBMITTED), Status.CANCELLED, actor, note, changes
        )
        handle = before.handle
        if handle is None and orphan and self.backend.supports_lookup:
            try:
                found = await self.backend.find_by_label(idem)
            except BackendError as exc:
                found = None
                await self.ledger.add_event(
                    idem, actor, f"orphan lookup failed: {_describe(exc)}", Status.CANCELLED.value
                )
            handle = found.id if found is not None else None
        if handle:
            try:
                remote = await self.backend.cancel(handle)
                remote_note = f"remote {handle} is {remote.api_status}"
            except BackendError as exc:
                remote_note = f"remote cancel of {handle} failed: {_describe(exc)}"
            await self.ledger.add_event(idem, actor, remote_note, Status.CANCELLED.value)
        return row

    async def adopt(self, idem: str, interaction_id: str, *, actor: Actor = Actor.CLI) -> Row:
        """Attach an existing interaction to a `reserving` or `failed` row."""
        interaction_id = interaction_id.strip()
        if not interaction_id or len(interaction_id) > 256 or not interaction_id.isprintable():
            raise OperatorError(f"{interaction_id!r} is not an interaction id")
        await self._require(idem)
        try:
            remote = await self.backend.get(interaction_id)
        except InteractionGoneError as exc:
            raise OperatorError(f"interaction {interaction_id} does not exist (404)") from exc
        except BackendError as exc:
            raise OperatorError(f"cannot verify {interaction_id}: {_describe(exc)}") from exc
        label = (remote.raw.get("labels") or {}).get("idem")
        if label is not None and label != idem:
            raise OperatorError(f"interaction {interaction_id} is labelled for job {label}")
        now = self.clock.now()
        try:
            return await self._operator(
                idem,
                (Status.RESERVING, Status.FAILED),
                Status.SUBMITTED,
                actor,
                f"operator adopted {interaction_id}",
                {
                    "handle": interaction_id,
                    "inflight": 0,
                    "held": 0,
                    "submitted_at": now,
                    "next_at": now,
                    "last_error": None,
                    "error_streak": 0,
                },
            )
        except Exception as exc:
            if "UNIQUE" in str(exc):
                raise OperatorError(
                    f"{interaction_id} is already the handle of another job"
                ) from exc
            raise

    async def _require(self, idem: str) -> Row:
        row = await self.ledger.get(idem)
        if row is None:
            raise OperatorError(f"no job with key {idem}")
        return row

    async def _operator(
        self,
        idem: str,
        expect: tuple[Status, ...],
        to: Status,
        actor: str,
        note: str,
        changes: dict[str, Any],
    ) -> Row:
        row = await self.ledger.operator_update(
            idem, expect, to, actor, note, changes, me=self.owner
        )
        if row is not None:
            return row
        current = await self._require(idem)
        if current.status not in expect:
            allowed = "/".join(s.value for s in expect)
            raise OperatorError(f"{idem} is {current.status}; this applies to {allowed} rows")
        holder = current.lease_owner or "?"
        alive = holder_alive(holder)
        raise OperatorError(
            f"{idem} is being worked on by {holder}"
            f"{' (alive)' if alive else ''}; try again when its lease ends"
        )

    # -- helpers ----------------------------------------------------------------------------
    async def _apply(self, transitions: Sequence[Transition], report: PassReport) -> set[str]:
        """Write back a batch; count only what applied (a pass that lost a
        row's lease reports nothing it did not write)."""
        applied = set(await self.ledger.apply(self.owner, self.config.actor, transitions))
        for t in transitions:
            if t.idem not in applied:
                report.counts["lease_lost"] += 1
            elif t.tally:
                report.counts[t.tally] += 1
        return applied

    async def _disown_late_creates(
        self, transitions: Sequence[Transition], applied: set[str]
    ) -> None:
        """A create that succeeded after this process lost the row's lease
        (it was paused or slow past the lease) belongs to nobody: write it into
        the row's history and ask the API to cancel it."""
        for t in transitions:
            handle = t.changes.get("handle")
            if t.to != Status.SUBMITTED or t.idem in applied or not handle:
                continue
            try:
                remote = await self.backend.cancel(handle)
                outcome = f"cancel asked: {remote.api_status}"
            except BackendError as exc:
                outcome = f"cancel failed: {_describe(exc)}"
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


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    name = type(exc).__name__
    text = str(exc) or name
    return f"{name}[{status}]: {text}" if status else f"{name}: {text}"
