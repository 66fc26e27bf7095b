"""Lanes (core/engine/lanes.py) beside the engine's twins and an operator's
actions: a twin (`Engine.acting_as`: the Python API's `serve`, an attached
console) runs its passes in the engine's lanes, and an operator's action on
a row a sibling lane holds is taken as on the engine's own, only where the
row is in a status the action applies to. Counts only: the fake backend, a
manual clock, no time judged."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import lane_owner
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.row_notes import ASKS
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import OperatorError
from tests.unit.test_lanes import _count_claims

pytestmark = pytest.mark.postgres


async def _two_lanes(
    tmp_path: Path, pg_dsn: str, clock: ManualClock
) -> tuple[Engine, list[Ledger]]:
    ledgers = [await open_ledger(pg_dsn, clock=clock) for _ in range(2)]
    engine = Engine(
        ledgers[0],
        FakeBackend(clock=clock, latency=0.0),
        DirectorySink(tmp_path / "out"),
        config=EngineConfig(concurrency=4),
        owner="h|1|s",
        lane_ledgers=ledgers[1:],
    )
    return engine, ledgers


@pytest.mark.parametrize("twin", [False, True])
async def test_a_twin_sends_in_the_engines_lanes(tmp_path: Path, pg_dsn: str, twin: bool) -> None:
    clock = ManualClock()
    engine, ledgers = await _two_lanes(tmp_path, pg_dsn, clock)
    claimed: Counter[str] = Counter()
    for ledger in ledgers:
        _count_claims(ledger, claimed)
    try:
        await engine.submit([JobSpec(input=f"twin {i}", model="m") for i in range(40)], send=False)
        runner = engine.acting_as(Actor.SERVICE) if twin else engine
        report = await runner.send_reserved()
    finally:
        for ledger in ledgers:
            await ledger.close()
    assert report.counts["sent"] == 40
    assert claimed[lane_owner("h|1|s", 1)] > 0, claimed
    # The twin keeps the engine's lanes' state (their limits, their stranded leases).
    assert engine.acting_as(Actor.CONSOLE)._lane_state is engine._lane_state


@pytest.mark.parametrize("lane", [0, 1])
async def test_a_retry_refused_for_its_status_stays_refused(
    tmp_path: Path, pg_dsn: str, lane: int
) -> None:
    """A retry meets a `reserving` row a lane is sending (refused for its
    status); meanwhile the lane fails the row and lets it go. The retry is
    not tried again as the lane: the operator asked to retry a row that was
    not failed."""
    clock = ManualClock()
    engine, ledgers = await _two_lanes(tmp_path, pg_dsn, clock)
    db = ledgers[0]
    try:
        await engine.submit([JobSpec(input="being sent", model="m")], send=False)
        ((idem,),) = await db.select("SELECT idem FROM jobs")
        owner = "h|1|s" if lane == 0 else lane_owner("h|1|s", 1)
        got = await db.claim_sendable(owner, limit=1, lease_seconds=60)
        assert [r.idem for r in got.rows] == [idem]
        real_get, calls = db.get, [0]

        async def get(key: str) -> Any:
            row = await real_get(key)
            calls[0] += 1
            if calls[0] == 2:  # after the refused compare-and-set: the lane fails the row
                failed = Sql(
                    lambda d: (
                        "UPDATE jobs SET status = 'failed', lease_owner = NULL,"
                        f" lease_until = 0 WHERE idem = {d.p}"
                    )
                )
                async with db.write() as con:
                    await con.execute(failed, [key])
            return row

        db.get = get  # type: ignore[method-assign]
        with pytest.raises(OperatorError):
            await engine.acting_as(Actor.CONSOLE).operator.retry(idem, actor=Actor.CONSOLE)
    finally:
        for ledger in ledgers:
            await ledger.close()


@pytest.mark.parametrize("lane", [0, 1])
async def test_an_answer_to_a_row_a_sibling_lane_polls(
    tmp_path: Path, pg_dsn: str, lane: int
) -> None:
    clock = ManualClock()
    engine, ledgers = await _two_lanes(tmp_path, pg_dsn, clock)
    db = ledgers[0]
    try:
        await engine.submit([JobSpec(input="asks a question", model="m")])
        ((idem,),) = await db.select("SELECT idem FROM jobs")
        row = await db.get(idem)
        assert row is not None and row.status == Status.SUBMITTED and row.handle
        # The interaction asks something: held for an answer, and still polled.
        held = Sql(
            lambda d: (
                f"UPDATE jobs SET held = 1, last_error = {d.p}, next_at = 0 WHERE idem = {d.p}"
            )
        )
        async with db.write() as con:
            await con.execute(held, [ASKS + "which year?", idem])
        owner = "h|1|s" if lane == 0 else lane_owner("h|1|s", 1)
        got = await db.claim_pollable(owner, limit=1, lease_seconds=60)
        assert [r.idem for r in got.rows] == [idem]
        console = engine.acting_as(Actor.CONSOLE)
        answered = await console.operator.answer(idem, "1999", actor=Actor.CONSOLE)
    finally:
        for ledger in ledgers:
            await ledger.close()
    assert answered.handle != row.handle
