"""Error branches of the engine that the suite had never run (issue 35.6's coverage
report): a batch sink that raises instead of answering per item, and a `done` row whose
stored result is missing. Each leaves the rows `done` with the error, loses nothing,
and a later pass delivers once the cause is gone."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.sinks import DirectorySink

JOBS = 4


class RaisingBatchSink:
    """A batch sink whose whole call fails (its disk went away), not item by item."""

    def __init__(self) -> None:
        self.calls = 0

    async def deliver(self, idem: str, result: StoredResult) -> None:
        raise AssertionError("a batch sink is handed the batch")

    async def deliver_many(
        self, items: Sequence[tuple[str, StoredResult]]
    ) -> list[BaseException | None]:
        self.calls += 1
        raise OSError(errno.EIO, "the sink's disk went away")


async def _done(engine: Engine, fake: FakeBackend, clock: ManualClock) -> list[str]:
    specs = [JobSpec(input=f"error branch {n}", model="m") for n in range(JOBS)]
    await engine.submit(specs)
    idems = [idempotency_key(s) for s in specs]
    for idem in idems:
        row = await engine.ledger.get(idem)
        assert row is not None and row.handle is not None
        fake.finish(row.handle)
    clock.advance(2)
    return idems


async def test_a_batch_sink_that_raises_leaves_every_row_done_for_a_later_delivery(
    ledger: Ledger, fake: FakeBackend, clock: ManualClock, out_dir: Path
) -> None:
    sink = RaisingBatchSink()
    config = EngineConfig(concurrency=JOBS)
    engine = Engine(ledger, fake, sink, config=config, owner="t|1|a")
    idems = await _done(engine, fake, clock)
    report = await engine.reclaim()
    assert sink.calls == 1
    assert report.counts["completed"] == JOBS and report.counts["sink_errors"] == JOBS
    assert report.counts["consumed"] == 0
    for idem in idems:
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.DONE
        assert row.last_error is not None and "the sink's disk went away" in row.last_error

    fixed = Engine(ledger, fake, DirectorySink(out_dir), config=config, owner="t|1|a")
    clock.advance(3600)
    replayed = await fixed.replay(force=True)
    assert replayed.counts["consumed"] == JOBS
    for n, idem in enumerate(idems):
        text = (out_dir / f"{idem}.md").read_text(encoding="utf-8")
        assert text == fake_output_text(f"error branch {n}")


async def test_a_done_row_without_its_stored_result_is_not_consumed(
    ledger: Ledger, fake: FakeBackend, clock: ManualClock, out_dir: Path
) -> None:
    config = EngineConfig(concurrency=JOBS)
    engine = Engine(ledger, fake, DirectorySink(out_dir), config=config, owner="t|1|a")
    idems = await _done(engine, fake, clock)
    failing = Engine(ledger, fake, RaisingBatchSink(), config=config, owner="t|1|a")
    await failing.reclaim()  # every row done, its result stored, nothing delivered
    lost = idems[0]
    async with ledger.write() as db:
        await db.execute("DELETE FROM results WHERE idem = ?", [lost])
    clock.advance(3600)
    report = await engine.replay(force=True)
    assert report.counts["consumed"] == JOBS - 1
    row = await ledger.get(lost)
    assert row is not None and row.status == Status.DONE
    assert row.last_error is not None and f"no stored result for {lost}" in row.last_error
    assert not (out_dir / f"{lost}.md").exists()
