"""The reclaim pass: poll every due `submitted` row (polling.py turns each
answer into its transition), cancel what ran past its deadline, store what
completed and deliver exactly what was just committed `done` (delivering.py).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from typing import Any

from reclaim_tui.core.answer_budget import AnswerBudget, AnswerDeferred, polling_under
from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.engine import batch_pass, delivering, polling
from reclaim_tui.core.engine.batching import HeldBatch
from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.polled import PolledRows
from reclaim_tui.core.ledger.port import Claim
from reclaim_tui.core.models import (
    PassReport,
    RemoteInteraction,
    Row,
    Status,
    StoredResult,
    Transition,
    make_stored_result,
)

__all__ = ["RESULT_BUDGET", "by_budget", "reclaim", "result_size"]

#: Characters of results a pass stores and delivers at once: a batch whose
#: results come to more is stored and delivered a group at a time, the
#: results of one group released before the next is encoded. Also the bytes
#: of answers a round of polls holds (answer_budget.py): a poll that would
#: pass it while others are held is deferred until they are released.
RESULT_BUDGET = 32 * 1024 * 1024


async def reclaim(parts: EngineParts) -> PassReport:
    """Poll every due `submitted` row, each at most once (a row due again
    at once waits for the next pass); store and deliver what completed.

    One transaction a batch: it records the batch's poll outcomes (`done`
    with its stored result, before the sink runs), the previous batch's
    delivery marks (`consumed`, after its sink ran) and claims the next
    batch. A batch's leases are held until its marks are written."""
    report = PassReport()
    budget = AnswerBudget(RESULT_BUDGET)
    polled = PolledRows()
    narrow: int | None = None  # after a round with deferred polls: the rows a claim takes
    marks: list[Transition] = []  # the previous batch's, written with this one's outcomes
    async with contextlib.AsyncExitStack() as holds:
        claim = None
        if not parts.circuit.open:
            claim = await batch_pass.claimed(
                parts, parts.ledger.claim_pollable, limit=parts.flight()
            )
        held = await _hold(parts, holds, claim) if claim is not None else None
        previous: contextlib.AsyncExitStack | None = None
        while claim is not None and held is not None:
            chunk, batch = held
            polled.claimed([r.idem for r in claim.rows])  # a list: no resume a row
            get_one = functools.partial(_get_one, parts, budget)
            outcomes, deferred = await _polled(parts, batch, polled, claim.rows, get_one)
            if deferred:
                # As many at once as the budget just took: no more unread answers.
                narrow = min(narrow or len(outcomes), max(1, len(outcomes)))
            report.counts["polled"] += len(outcomes)
            crashpoint("after_fetch_before_done")
            now = parts.clock.now()
            todo = [polling.after_poll(r, o, parts.config, now) for r, o in outcomes]
            del outcomes  # each result is now held by its transition alone
            upcoming: Claim | None = None
            for group in by_budget(todo, RESULT_BUDGET):
                # A batch's last group is written with the next batch's claim
                # (one commit); the pending marks go with the first group.
                if todo:
                    applied = await batch_pass.apply(parts, [*marks, *group], report)
                    polled.written(group, applied)
                else:
                    applied, upcoming = await batch_pass.apply_claiming(
                        parts, [*marks, *group], report, polled=polled, limit=narrow
                    )
                    if previous is not None:
                        await previous.aclose()  # its marks are written: its leases may go
                    held = await _hold(parts, holds, upcoming) if upcoming is not None else None
                marks = await _deliver(parts, claim.rows, group, applied, report, batch)
                budget.release([t.idem for t in group])
                group.clear()  # its results, their text and JSON, go before the next's
            previous, claim = chunk, upcoming
        if marks:
            await batch_pass.apply(parts, marks, report)
    return parts.noted(report)


async def _polled(
    parts: EngineParts,
    batch: HeldBatch,
    polled: PolledRows,
    rows: Sequence[Row],
    get_one: Callable[[Row], Awaitable[object]],
) -> tuple[list[tuple[Row, Any]], int]:
    """Poll `rows` with the pass's concurrency; their outcomes, and how many
    polls the answer budget deferred. A deferred poll is no outcome: its row
    is given back, not polled, and stays due (the next claim of this pass
    takes it again)."""
    # Polls need not start together (their outcomes are written after the
    # batch): a worker more only while the running ones wait for answers.
    outcomes = await batch_pass.each(parts, rows, get_one, batch, at_once=False)
    deferred = {r.idem for r, o in outcomes if isinstance(o, AnswerDeferred)}
    if not deferred:
        return outcomes, 0
    polled.given_back(deferred)
    batch.held -= deferred
    batch.started -= deferred
    await parts.ledger.release(parts.owner, deferred)
    return [(r, o) for r, o in outcomes if r.idem not in deferred], len(deferred)


async def _deliver(
    parts: EngineParts,
    rows: Sequence[Row],
    group: list[Transition],
    applied: Collection[str],
    report: PassReport,
    batch: HeldBatch,
) -> list[Transition]:
    """Deliver exactly what `group` just committed `done` (the same values,
    not a second read of them); the delivery marks to write next."""
    now = parts.clock.now()
    stored = {
        t.idem: _stored(t.idem, t.result, now)
        for t in group
        if t.to == Status.DONE and t.result is not None and t.idem in applied
    }
    done = [row for row in rows if row.idem in stored]
    crashpoint("after_done_before_sink")
    return await delivering.delivery_marks(parts, done, report, batch, stored)


def by_budget(todo: list[Transition], budget: int) -> Iterator[list[Transition]]:
    """`todo` in groups whose results come to at most `budget` characters
    (a larger result is a group of its own; transitions without a result
    join the first group; no transition at all, one empty group). Taken out
    of `todo` as they are handed over: a group the caller clears holds its
    results no more."""
    if not todo:
        yield []
    todo.reverse()
    while todo:
        group: list[Transition] = []
        held = 0
        while todo:
            size = result_size(todo[-1].result)
            if group and size and held + size > budget:
                break
            group.append(todo.pop())
            held += size
        yield group


def result_size(result: RemoteInteraction | None) -> int:
    """About what storing and delivering `result` holds in memory, in
    characters: its strings (the output text is in the interaction too)
    and its output text again (its own column); 0 without a result."""
    if result is None:
        return 0
    return _strings(result.raw) + len(result.output_text or "")


def _strings(value: object) -> int:
    """The characters of `value`'s strings and keys, 8 for any other leaf:
    one walk with a stack of its own (a call per node costs more than the
    counting)."""
    total = 0
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            for k, v in item.items():
                total += len(str(k))
                todo.append(v)
        elif isinstance(item, list):
            todo.extend(item)
        else:
            total += 8
    return total


async def _hold(
    parts: EngineParts, holds: contextlib.AsyncExitStack, claim: Claim
) -> tuple[contextlib.AsyncExitStack, HeldBatch]:
    """Hold a claimed batch (its leases renewed) from the moment it is
    claimed until its own stack is closed, or the pass's ends."""
    chunk = contextlib.AsyncExitStack()
    await holds.enter_async_context(chunk)
    batch = await chunk.enter_async_context(batch_pass.hold(parts, claim, started_free=True))
    return chunk, batch


async def _get_one(
    parts: EngineParts, budget: AnswerBudget, row: Row
) -> RemoteInteraction | polling.Overdue | Exception:
    assert row.handle is not None, "submitted rows always have a handle"
    out: RemoteInteraction | Exception
    with polling_under(budget, row.idem):
        # The answer or its error: the row's outcome (rule 7), taken here
        # rather than through batch_pass.outcome, a coroutine more a poll.
        try:
            out = await parts.backend.get(row.handle)
        except Exception as exc:
            out = exc
    if isinstance(out, AnswerDeferred):
        return out  # no answer read: nothing for the circuit to learn
    parts.circuit.record(out)
    if not isinstance(out, RemoteInteraction):
        return out
    deadline = polling.overdue(row, out, parts.config, parts.clock.now())
    if deadline is None:
        return out
    # Past its deadline: cancel it, and keep whatever it produced so far.
    cancelled = await batch_pass.outcome(parts.backend.cancel(row.handle))
    parts.circuit.record(cancelled)
    return polling.Overdue(out, deadline, cancelled)


def _stored(idem: str, result: RemoteInteraction, now: float) -> StoredResult:
    return make_stored_result(
        idem, result.id, result.output_text or "", result.usage, result.raw_json(), now
    )
