"""Poll now and discard (issue 25) on both engines: poll now makes an
in-flight row due at once and nothing else; discard deletes one finished
row with its events and result, its archive line written first, and
refuses a row that is not finished or whose cancel is still pending."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.prune import discard
from reclaim_tui.core.models import Actor, Status
from reclaim_tui.core.sinks import CallableSink
from reclaim_tui.errors import OperatorError
from tests.unit.test_prune import DAY, MIXED, NOW, keys, read_archive, seed


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[Engine]:
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    await seed(ledger, MIXED)
    async with ledger.write() as db:
        await db.execute(
            Sql(lambda d: f"UPDATE jobs SET next_at = {d.p} WHERE status = 'submitted'"),
            (NOW + DAY,),
        )

    async def sink(idem: str, result: object) -> None:
        return None

    yield Engine(ledger, FakeBackend(clock=clock), CallableSink(sink, "test"))
    await ledger.close()


async def test_poll_now_makes_an_in_flight_row_due_at_once(engine: Engine) -> None:
    before = await engine.ledger.get("old-submitted")
    assert before is not None and before.next_at > NOW
    row = await engine.operator.poll_now("old-submitted", actor=Actor.CONSOLE)
    assert row.status == Status.SUBMITTED and row.next_at == NOW
    assert row.attempts == before.attempts and row.handle == before.handle
    events = await engine.ledger.events("old-submitted")
    assert events[-1].actor == "console" and "poll now" in (events[-1].note or "")
    for idem in ("old-done", "old-reserving", "old-failed"):
        with pytest.raises(OperatorError, match="submitted"):
            await engine.operator.poll_now(idem, actor=Actor.CONSOLE)


async def test_discard_archives_then_deletes_one_finished_row(
    engine: Engine, tmp_path: Path
) -> None:
    archive = tmp_path / "pruned.jsonl"
    ledger = engine.ledger
    row = await discard(ledger, "old-consumed-1", now=NOW, archive=archive)
    assert row.idem == "old-consumed-1"
    assert "old-consumed-1" not in await keys(ledger)
    assert "old-consumed-1" not in await keys(ledger, "events")
    assert "old-consumed-1" not in await keys(ledger, "results")
    [line] = read_archive(archive)
    assert line["idem"] == "old-consumed-1" and line["output_text"] and line["events"]
    assert len(await keys(ledger)) == len(MIXED) - 1  # that row only
    for idem in ("old-done", "old-submitted", "old-reserving"):
        with pytest.raises(OperatorError, match="discard applies to"):
            await discard(ledger, idem, now=NOW, archive=archive)
    with pytest.raises(OperatorError, match="no job"):
        await discard(ledger, "old-consumed-1", now=NOW, archive=archive)
    async with ledger.write() as db:
        await db.execute("UPDATE jobs SET held = 1 WHERE idem = 'old-cancelled'")
    with pytest.raises(OperatorError, match="cancel is still pending"):
        await discard(ledger, "old-cancelled", now=NOW, archive=archive)
    assert len(read_archive(archive)) == 1
    assert json.loads(archive.read_text().splitlines()[0])["status"] == "consumed"
