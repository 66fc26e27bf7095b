"""A submit's send pass names only the keys it has not sent yet in each claim.

Each claim of a submit is scoped to the submit's keys; naming every key again
in every claim made the keys bound grow with the square of the submit's size
(a 5,000-job submit bound 400,000 keys over its 80 claims; now about half:
the keys still unsent). Counted, not timed: the keys handed to the ledger's
sendable claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

JOBS = 640
FLIGHT = 32


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def test_a_submits_claims_name_only_the_keys_left(tmp_path: Path) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "l.db", clock=clock)
    bound: list[int] = []

    def counting(method: Any) -> Any:
        async def claim(*args: Any, idems: Sequence[str] | None = None, **kw: Any) -> Any:
            bound.append(len(idems or ()))
            return await method(*args, idems=idems, **kw)

        return claim

    ledger.claim_sendable = counting(ledger.claim_sendable)  # type: ignore[method-assign]
    ledger.write_and_claim_sendable = counting(  # type: ignore[method-assign]
        ledger.write_and_claim_sendable
    )
    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(_noop),
        owner="t|1|x",
        config=EngineConfig(batch_size=FLIGHT, concurrency=FLIGHT),
    )
    try:
        report = await engine.submit([JobSpec(input=f"job {i}", model="m") for i in range(JOBS)])
        counts = await ledger.counts()
    finally:
        await ledger.close()
    assert report.counts["sent"] == JOBS, report.summary()
    assert counts["submitted"][0] == JOBS
    # Every batch of FLIGHT claimed, the first claim naming every key; by
    # the i-th claim at least i - 1 batches were written, and their keys
    # are no longer named (before: every claim named all JOBS keys).
    assert len(bound) >= JOBS // FLIGHT
    assert bound[0] == JOBS
    for i, named in enumerate(bound[2:], start=2):
        assert named <= JOBS - (i - 1) * FLIGHT, bound
