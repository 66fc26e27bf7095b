"""How every pass works a batch: claim it under this process's lease, hold
it (heartbeat, batching.py), run the API calls over it under the bound of
calls in flight (pacing.py) and the circuit breaker (circuit.py), and write
back the transitions in one transaction. Errors stay in their row (rule 7):
nothing one row does stops the pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import operator
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from reclaim_tui.core.engine.batching import HeldBatch, holding
from reclaim_tui.core.engine.pacing import AdaptiveLimit
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.polled import PolledRows
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.models import PassReport, Transition
from reclaim_tui.errors import BackendError, ReclaimError

__all__ = ["apply", "apply_claiming", "claimed", "each", "hold", "outcome"]

T = TypeVar("T")


async def outcome(call: Awaitable[T]) -> T | Exception:
    """The call's answer, or the exception it raised: the row's outcome."""
    try:
        return await call
    except Exception as exc:  # rule 7: the row's outcome, not the pass's
        return exc


async def claimed(
    parts: EngineParts,
    claim: Callable[..., Awaitable[Claim]],
    *args: Any,
    limit: int | None = None,
    **kw: Any,
) -> Claim | None:
    """One batch of a named claim under the engine's owner and lease
    (`limit` rows, a whole batch by default); None when empty."""
    got = await claim(
        parts.owner,
        *args,
        limit=parts.config.batch_size if limit is None else limit,
        lease_seconds=parts.config.lease_seconds,
        **kw,
    )
    if not got.rows:
        return None
    warm = getattr(parts.backend, "warm", None)
    if warm is not None:
        await warm()  # the SDK's first import, before any attempt is committed
    return got


def hold(
    parts: EngineParts, claim: Claim, *, started_free: bool = False
) -> contextlib.AbstractAsyncContextManager[HeldBatch]:
    """The claimed batch's leases, renewed while the pass works on it; a
    failed pass gives back what it did not finish (batching.py: with
    `started_free`, the started rows too)."""
    return holding(
        parts.ledger,
        parts.owner,
        [r.idem for r in claim.rows],
        parts.config.lease_seconds,
        stranded=parts.stranded,
        started_free=started_free,
    )


async def apply(parts: EngineParts, todo: Sequence[Transition], report: PassReport) -> set[str]:
    """Write back a batch; count only what applied (a pass that lost a
    row's lease reports nothing it did not write). Row errors are reported
    either way: the call failed whether or not its outcome was written."""
    for t in todo:
        if t.error:
            report.error(t.idem, t.error)
    applied = set(await parts.ledger.apply(parts.owner, parts.config.actor, todo))
    _tally(todo, applied, report)
    return applied


async def apply_claiming(
    parts: EngineParts,
    todo: Sequence[Transition],
    report: PassReport,
    *,
    polled: PolledRows,
    limit: int | None = None,
) -> tuple[set[str], Claim | None]:
    """`apply`, and the reclaim pass's next batch claimed in the same
    transaction (one commit where there were two): the calls in flight, or
    fewer (`limit`), none of them a row the pass already `polled` that is
    still due; no claim once the circuit is open. Returns (the idems
    applied, the claim or None)."""
    for t in todo:
        if t.error:
            report.error(t.idem, t.error)
    now = parts.clock.now()
    take = 0 if parts.circuit.open else min(parts.flight(), limit or parts.flight())
    applied, got = await parts.ledger.apply_and_claim_pollable(
        parts.owner,
        parts.config.actor,
        todo,
        limit=take,
        lease_seconds=parts.config.lease_seconds,
        exclude=polled.skipped(now),
        now=now,
    )
    done = set(applied)
    polled.written(todo, done)
    _tally(todo, done, report)
    got = await _not_again(parts, polled, got, take)
    if not got.rows:
        return done, None
    warm = getattr(parts.backend, "warm", None)
    if warm is not None:
        await warm()
    return done, got


async def _not_again(parts: EngineParts, polled: PolledRows, got: Claim, take: int) -> Claim:
    """`got` without the rows the pass polled already (their next poll was
    moved into the pass by someone else: they wait for the next pass),
    given back; claimed anew while that leaves nothing but more may be due.
    Each round skips more rows: it ends."""
    while again := polled.again([r.idem for r in got.rows]):  # a list: no resume a row
        await parts.ledger.release(parts.owner, again)
        rows = [r for r in got.rows if r.idem not in again]
        if rows:
            return Claim(got.owner, rows)
        got = await parts.ledger.claim_pollable(
            parts.owner,
            limit=take,
            lease_seconds=parts.config.lease_seconds,
            exclude=polled.skipped(parts.clock.now()),
        )
    return got


def _tally(todo: Sequence[Transition], applied: set[str], report: PassReport) -> None:
    for t in todo:
        if t.idem not in applied:
            report.counts["lease_lost"] += 1
        elif t.tally:
            report.counts[t.tally] += 1


async def each(
    parts: EngineParts,
    items: Sequence[Any],
    fn: Callable[[Any], Awaitable[Any]],
    batch: HeldBatch,
    key: Callable[[Any], str] = operator.attrgetter("idem"),
    *,
    calls_api: bool = True,
    at_once: bool = True,
) -> list[tuple[Any, Any]]:
    """Run fn over items with at most `concurrency` calls in flight (a pool
    of workers, not a task per item: a 2,000-row batch costs 16 tasks);
    an Exception becomes that item's value, nothing else stops the pass.
    An item whose lease this process lost is not started and not returned
    (`key`: an item's row key; a row's own by default, read without a
    Python call an item).

    API calls start together (all the pool's workers at once: a send's
    attempts then share one group commit). Other work (a sink), and calls
    that need not start together (`at_once=False`: a poll, whose outcomes
    are written after the batch), start a worker only when the running ones
    all wait: each worker that takes an item makes sure one more stands
    ready, so work that waits fills the pool, and work that finishes at
    once runs on one worker, not a task an item."""
    circuit = parts.circuit
    outs: dict[int, Any] = {}
    queue = iter(enumerate(items))
    # Until one call comes back without an outside failure, calls go one
    # at a time (circuit.py): the first worker probes, the others wait
    # for it to warm the circuit, open it, or run out of items.
    go = asyncio.Event()
    if not calls_api or circuit.warm:
        go.set()
    # `go.set()` made once by the rows (a call a row more otherwise)
    released = go.is_set()
    limit = parts.limit if calls_api else None
    if limit is not None:
        limit.begin_pass()
    tasks: list[asyncio.Task[None]] = []
    first = parts.config.concurrency if limit is None else limit.current
    ready = [0]  # workers started and not running yet
    last = len(items) - 1
    lazy = not (calls_api and at_once)  # a worker more only when the running ones wait

    def bound() -> int:
        """The most workers now: the calls in flight the limit allows."""
        return first if limit is None else limit.current

    # The workers reach `spawn` through this list, and `spawn` reaches the
    # workers: a cycle, which would hold the finished tasks, the items and
    # the outcomes until the collector next ran. Emptied at the end, it
    # breaks, and all of it goes as soon as the caller drops the outcomes.
    spawner: list[Callable[[], None]] = []
    # Set when the last worker ends (or one fails): awaited in place of a
    # gather, which would add a callback, with a copy of the context, to
    # every worker (a batch of calls in flight is a worker a row).
    finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    running = [0]  # workers started and not ended; only a running one spawns more
    # A CancelledError out of a row's step while nobody cancelled the pass
    # (a group commit given up under it): the pass fails, once the calls
    # the other workers have in flight come back; none starts another.
    stray: list[BaseException] = []

    async def worker(n: int) -> None:
        nonlocal released
        ready[0] -= 1
        try:
            if n > 0:
                await go.wait()
            try:
                for index, item in queue:
                    if stray or finished.done():
                        break  # a stray cancel, or the pass is over: no new call
                    idem = key(item)
                    # `tripped`, not the `open` property: a call less a row
                    if not batch.holds(idem) or (calls_api and circuit.tripped is not None):
                        continue
                    batch.started.add(idem)
                    if lazy and index < last and not ready[0] and len(tasks) < bound():
                        spawner[0]()  # to take the next item if this one waits
                    started = time.perf_counter()
                    try:
                        outs[index] = await fn(item)
                    except Exception as exc:
                        outs[index] = exc
                    if not released and (circuit.warm or circuit.tripped is not None):
                        released = True
                        go.set()
                    if limit is not None and _paced(
                        limit, outs[index], started, n, tasks, None if lazy else spawner[0]
                    ):
                        return  # the limit shrank below this worker
            finally:
                go.set()
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and not task.cancelling() and not finished.done():
                stray.append(exc)
            else:
                finished.cancel()
            raise
        except BaseException as exc:  # the pass's failure, raised as gather raised it
            if not finished.done():
                finished.set_exception(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise  # out of the event loop at once, as from any task
        finally:
            running[0] -= 1
            if not running[0] and not finished.done():
                finished.set_result(None)

    def spawn() -> None:
        ready[0] += 1
        running[0] += 1
        tasks.append(asyncio.create_task(worker(len(tasks))))

    spawner.append(spawn)
    for _ in range(min(1 if lazy else first, len(items))):
        spawn()
    try:
        if tasks:
            await finished
    except asyncio.CancelledError:
        # The pass is cancelled: its workers are cancelled (as a cancelled
        # gather cancels its children) and waited for, so none outlives it.
        for task in tasks:
            task.cancel()
        pending = set(tasks)
        while pending:
            try:
                _, pending = await asyncio.wait(pending)
            except asyncio.CancelledError:
                continue  # cancelled again: still none outlives the pass
        raise
    finally:
        spawner.clear()
    if stray:
        # Not the caller's cancel: a failed pass, which its callers handle
        # (leases of rows never started given back, the failure reported),
        # where a CancelledError would read as their own task cancelled.
        raise ReclaimError(
            "a row's step was cancelled while its pass was not; the pass ended"
            " once the calls in flight came back"
        ) from stray[0]
    return [(items[i], outs[i]) for i in sorted(outs)]


def _paced(
    limit: AdaptiveLimit,
    out: Any,
    started: float,
    worker: int,
    tasks: list[asyncio.Task[None]],
    spawn: Callable[[], None] | None,
) -> bool:
    """Tell the limit about one call; spawn the workers it now allows (none
    without `spawn`: a pool that grows only when its workers wait). True
    when the calling worker (the `worker`-th spawned) is above the limit
    and must stop."""
    cause = out.cause if isinstance(out, BackendError) else None
    target = limit.observe(time.perf_counter() - started, cause)
    while spawn is not None and len(tasks) < target:
        spawn()
    return worker >= target
