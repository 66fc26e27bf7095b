"""Error branches of the engine that the suite had never run (issue 35.6's coverage
report): a batch sink that raises instead of answering per item, a `done` row whose
stored result is missing, and an orphan whose inbox event cannot be confirmed yet. Each
loses nothing, pays nothing twice, and a later pass finishes once the cause is gone."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, Status, StoredResult
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import MaybeCreatedError, TransientReadError

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
        await db.execute(Sql(lambda d: f"DELETE FROM results WHERE idem = {d.p}"), [lost])
    clock.advance(3600)
    report = await engine.replay(force=True)
    assert report.counts["consumed"] == JOBS - 1
    row = await ledger.get(lost)
    assert row is not None and row.status == Status.DONE
    assert row.last_error is not None and f"no stored result for {lost}" in row.last_error
    assert not (out_dir / f"{lost}.md").exists()


async def test_an_orphan_whose_event_cannot_be_confirmed_yet_waits_and_is_adopted(
    tmp_path: Path, db_url: str
) -> None:
    """The `get` that confirms an inbox event fails (the API erring): the orphan is
    neither resent nor failed, and a later pass adopts the interaction the event named."""
    clock = ManualClock()
    ledger = await open_ledger(db_url, clock=clock)
    fake = FakeBackend(clock=clock, latency=None, supports_lookup=False)
    config = EngineConfig(webhooks=True, webhook_grace=300.0, first_poll=120.0)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config, owner="t|1|x")
    try:
        job = JobSpec(input="an orphan whose event cannot be confirmed yet", model="m")
        idem = idempotency_key(job)
        fake.create_faults = [(MaybeCreatedError("connection reset after send"), True)]
        await engine.tick([job])
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.RESERVING and row.inflight
        handle = fake.handle_for(idem)
        event = inbox.InboxEvent(
            "msg_1",
            clock.now(),
            "interaction.completed",
            handle,
            idem,
            "completed",
            "jwt",
            row.attempt_tag,
        )
        assert await inbox.record(ledger, event)
        fake.get_faults[handle] = [TransientReadError("503 the API is erring", 503)]
        await engine.tick()
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.RESERVING and row.inflight
        assert row.handle is None and fake.calls["create"] == 1
        for _ in range(5):  # within the webhook grace: the event is looked at again
            clock.advance(30)
            await engine.tick()
            row = await ledger.get(idem)
            assert row is not None
            if row.handle is not None:
                break
        assert row.handle == handle and fake.calls["create"] == 1 and row.duplicates == 0
    finally:
        await ledger.close()
