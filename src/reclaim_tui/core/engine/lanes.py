"""Lanes: the send and reclaim passes run as several claim–write loops at
once, each on a ledger connection of its own and under an owner of its own.

A pass is a chain: a claim, the API calls, a write that records them and
claims the next batch. Each link waits for the one before, so with one
connection the process and a PostgreSQL server take turns: the server is
idle while the process works a batch's rows, and the process waits while
the server writes. Two lanes fill each other's gaps (the measured gain is
on docs/performance.md). SQLite has one writer: lanes are refused there
(config.py, Settings.validate).

A lane is another lease owner, as another host would be: the claims, the
compare-and-sets and the fairness between hosts are the ones every pass
already keeps, and a process's lanes never take each other's rows. Lane
`n`'s owner is the process's with `-lane<n>` after its start time, so it is
judged alive or dead with the process (core/ledger/owner.py reads the start
up to the first `-`). The calls in flight are shared out: `--concurrency
16` on two lanes is 8 a lane, never 16 each.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.engine.policy import EngineConfig
from reclaim_tui.core.ledger.owner import lane_owner
from reclaim_tui.core.models import PassReport
from reclaim_tui.errors import LedgerError

__all__ = ["Step", "across", "lane_config", "lane_owner", "shares"]

#: a pass on one lane: (the lane's number, its parts) -> its report
Step = Callable[[int, EngineParts], Awaitable[PassReport]]


def shares(total: int, lanes: int) -> list[int]:
    """`total` calls in flight shared out over `lanes`, the first lanes
    taking the remainder: 16 over 3 is 6, 5, 5."""
    base, extra = divmod(total, lanes)
    return [base + (1 if n < extra else 0) for n in range(lanes)]


def lane_config(config: EngineConfig, lanes: int, lane: int) -> EngineConfig:
    """`config` for one of `lanes` lanes: its share of the calls in flight
    (and of the adaptive ceiling), at least one (a pace set below the
    number of lanes while a service runs)."""
    concurrency = max(1, shares(config.concurrency, lanes)[lane])
    ceiling = None
    if config.max_concurrency is not None:
        ceiling = max(concurrency, shares(config.max_concurrency, lanes)[lane])
    return dataclasses.replace(config, concurrency=concurrency, max_concurrency=ceiling)


async def across(
    lanes: Sequence[EngineParts],
    step: Step,
    answered: asyncio.Event | None = None,
) -> PassReport:
    """`step` on every lane at once; their reports merged. A lane that fails
    does not stop the others: each finishes its batch and writes it (a lane
    cut off mid-batch would leave creates whose outcome is unknown). Then the
    first failure is raised; a ledger error carries the whole report.

    `answered`: while the circuit breaker waits for the API's first answer
    (core/engine/circuit.py), the first lane calls alone; the others start
    once it is set, or once the first lane's step ended."""
    first = asyncio.ensure_future(step(0, lanes[0]))

    async def later(n: int, parts: EngineParts) -> PassReport:
        if answered is not None and not answered.is_set() and not first.done():
            heard = asyncio.ensure_future(answered.wait())
            try:
                await asyncio.wait((first, heard), return_when=asyncio.FIRST_COMPLETED)
            finally:
                heard.cancel()
        return await step(n, parts)

    outcomes = await asyncio.gather(
        first, *[later(n, parts) for n, parts in enumerate(lanes) if n], return_exceptions=True
    )
    report = PassReport()
    failure: BaseException | None = None
    for outcome in outcomes:
        if isinstance(outcome, PassReport):
            report.merge(outcome)
            continue
        if isinstance(outcome, LedgerError) and outcome.report is not None:
            report.merge(outcome.report)
        failure = failure or outcome
    if failure is None:
        return report
    if isinstance(failure, LedgerError):
        failure.report = report
    raise failure
