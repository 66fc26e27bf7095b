"""What a pass holds while it works: the batch's leases, kept alive by a
heartbeat, and a group commit for the writes its concurrent calls make.

The heartbeat survives a busy ledger: a renewal that fails is tried again
until the leases would have run out unrenewed, and only then is the batch
given up. Rows whose lease is lost are never started: a pass stops the
moment it knows it no longer holds a row (issue: "work stops the moment it
is [lost]").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.core.engine.transitions import Transition
from reclaim_tui.core.ledger.port import Claim, Ledger
from reclaim_tui.core.models import Actor, Row
from reclaim_tui.errors import LedgerError

__all__ = ["GroupCommit", "HeldBatch", "Rider", "Written", "holding"]

#: a group commit's writes (sending, transitions) with the next batch's claim
Rider = Callable[
    [Sequence[str], Sequence[Transition]],
    Awaitable[tuple[dict[str, Row], list[str], Claim]],
]

log = logging.getLogger("reclaim_tui.engine")


@dataclass
class HeldBatch:
    """The keys of a claimed batch this process still holds."""

    held: set[str] = field(default_factory=set)
    #: keys the pass started work on; the others are released at the end
    started: set[str] = field(default_factory=set)

    def holds(self, idem: str) -> bool:
        return idem in self.held


@contextlib.asynccontextmanager
async def holding(
    ledger: Ledger,
    owner: str,
    idems: Iterable[str],
    lease_seconds: float,
    *,
    stranded: set[str] | None = None,
    started_free: bool = False,
) -> AsyncIterator[HeldBatch]:
    """Renew the batch's leases every third of a lease while it is worked on.

    A pass that fails (the ledger refused a write, its server went away)
    gives up the rows it did not finish as well: those it never started,
    and with `started_free` (a step that only reads or repeats what is safe
    to repeat: a poll, an idempotent delivery, a cancel) the started ones
    too. Rows whose create may have been sent keep their lease: they become
    orphans when it runs out, as the rules for a lost answer say. A release
    the ledger refuses too is left in `stranded`, for the next pass."""
    batch = HeldBatch(set(idems))
    task = asyncio.create_task(_heartbeat(ledger, owner, batch, lease_seconds))
    try:
        yield batch
    except Exception:
        await _stop(task)  # no renewal racing the release
        free = batch.held if started_free else batch.held - batch.started
        try:
            await ledger.release(owner, free)
        except LedgerError as exc:
            log.warning("%d lease(s) of a failed pass not released now: %s", len(free), exc)
            if stranded is not None:
                stranded.update(free)
        raise
    finally:
        await _stop(task)
    # Rows the pass never started on (the circuit opened): free them now
    # rather than blocking other processes until the lease runs out.
    await ledger.release(owner, batch.held - batch.started)


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _heartbeat(ledger: Ledger, owner: str, batch: HeldBatch, lease_seconds: float) -> None:
    period = lease_seconds / 3
    renewed_at = ledger.clock.now()
    while batch.held:
        await asyncio.sleep(period)
        while True:
            try:
                batch.held &= await ledger.renew(owner, batch.held, lease_seconds)
            except LedgerError as exc:
                if ledger.clock.now() >= renewed_at + lease_seconds:
                    log.warning("lease renewal failed until the leases ran out: %s", exc)
                    batch.held.clear()
                    return
                # Another connection holds the write lock past busy_timeout:
                # try again while the leases are still ours.
                await asyncio.sleep(min(period, 1.0))
                continue
            renewed_at = ledger.clock.now()
            break


class Written:
    """What one group commit wrote: the rows it marked sending, by key, and
    the keys whose transitions applied."""

    __slots__ = ("applied", "marked")

    def __init__(self, marked: dict[str, Row], applied: set[str]) -> None:
        self.marked = marked
        self.applied = applied


class _Commit(asyncio.Future[Written]):
    """The future of one group commit, awaited by every writer in it. A
    writer's task that is cancelled does not cancel it (the others' writes
    are theirs): that writer is woken when the commit ends, then cancelled.
    Only the group commit itself gives it up (`abandon`)."""

    def cancel(self, msg: Any = None) -> bool:
        return False

    def abandon(self) -> None:
        super().cancel()


class GroupCommit:
    """Writes that arrive while a commit is running wait for the next one and
    go together, in one transaction (`Ledger.write_batch`). Every caller
    waits for its own write to be durable: on the future of the commit its
    write goes in, one for all the writes of that commit, whose `Written`
    it reads its own outcome from."""

    def __init__(
        self, ledger: Ledger, owner: str, actor: Actor, *, rider: Rider | None = None
    ) -> None:
        self._ledger = ledger
        self._owner = owner
        self._actor = actor
        self._pending: list[str | Transition] = []
        #: the future of the commit `_pending` will go in (None: none pending)
        self._next: _Commit | None = None
        self._task: asyncio.Task[None] | None = None
        #: writes the last write of a batch with the next batch's claim
        self._rider = rider
        self._last: Transition | None = None
        #: the claim taken with the last write (None: none was taken)
        self.next_claim: Claim | None = None

    def mark_sending(self, idem: str) -> asyncio.Future[Written]:
        """Commit the row's next attempt: the future of its commit, whose
        `marked` has the row as marked (not there if this process no longer
        holds it). A future to await, not a coroutine: every row sent asks
        for two writes, and a coroutine around each future is two more
        objects and a frame more to resume."""
        return self._submit(idem)

    def apply(self, transition: Transition, *, last: bool = False) -> asyncio.Future[Written]:
        """Commit one transition: the future of its commit, whose `applied`
        has its key if the compare-and-set applied. `last`: the batch's last
        write, committed with the next batch's claim."""
        if last:
            self._last = transition
        return self._submit(transition)

    def _submit(self, item: str | Transition) -> asyncio.Future[Written]:
        future = self._next
        if future is None:
            future = self._next = _Commit()
        self._pending.append(item)
        if self._task is None:
            self._task = task = asyncio.create_task(self._drain())
            task.add_done_callback(self._drained)
        return future

    def _drained(self, task: asyncio.Task[None]) -> None:
        """A drain task cancelled before its first step (a shutdown cancels
        every task at once) never runs its `finally`: its writers, whose
        shared future refuses their own cancel, would wait for ever. Give up
        that commit here. A drain that ran has already let go of `_task`."""
        if self._task is not task:
            return
        self._task = None
        if self._next is not None:
            self._next.abandon()
            self._pending, self._next = [], None

    async def _drain(self) -> None:
        try:
            while self._next is not None:
                batch, future = self._pending, self._next
                self._pending, self._next = [], None
                await self._commit(batch, future)
        finally:
            self._task = None
            if self._next is not None:  # only if cancelled mid-drain
                self._next.abandon()
                self._pending, self._next = [], None

    async def _commit(self, batch: list[str | Transition], future: _Commit) -> None:
        sending = [item for item in batch if isinstance(item, str)]
        todo = [item for item in batch if isinstance(item, Transition)]
        try:
            last = self._last
            # a list, not a generator: a resume per transition otherwise
            if self._rider is not None and any([t is last for t in todo]):
                marked, applied, self.next_claim = await self._rider(sending, todo)
            else:
                marked, applied = await self._ledger.write_batch(
                    self._owner, self._actor, sending=sending, transitions=todo
                )
        except asyncio.CancelledError:
            future.abandon()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            return
        future.set_result(Written(marked, set(applied)))
