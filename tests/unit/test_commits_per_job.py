"""Commits per job: what a job costs the disk is mostly its commits (each one
an fsync on SQLite, a WAL flush on PostgreSQL). Counted, not timed: every
COMMIT the ledger's connection runs while jobs go through every state.

The reclaim pass writes a chunk's poll outcomes, the previous chunk's
delivery marks (`consumed`) and its next claim in one transaction, where
each was a commit of its own: three commits a chunk became one. The send
pass takes its next chunk with the chunk's last group commit."""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

JOBS = 640
FLIGHT = 64  # a claim's rows: the calls one process has in flight
CHUNKS = JOBS // FLIGHT


async def _commits(tmp_path: Path, delivered: list[str]) -> tuple[int, dict[str, int]]:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    assert isinstance(ledger, SqliteLedger)
    statements: list[str] = []
    await ledger.connection.set_trace_callback(statements.append)

    async def sink(idem: str, result: StoredResult) -> None:
        delivered.append(idem)

    engine = Engine(
        ledger,
        FakeBackend(clock=clock, latency=0.0),
        CallableSink(sink),
        owner="count|1|x",
        config=EngineConfig(concurrency=FLIGHT, batch_size=2000),
    )
    try:
        await engine.submit([JobSpec(input=f"counted job {i}", model="m") for i in range(JOBS)])
        clock.advance(5)
        report = await engine.tick()
        counts = await ledger.counts()
    finally:
        await ledger.close()
    assert report.counts["consumed"] == JOBS, report.summary()
    commits = sum(1 for s in statements if s.strip().upper() == "COMMIT")
    return commits, {status: n for status, (n, _) in counts.items()}


async def test_a_job_through_every_state_costs_few_commits(tmp_path: Path) -> None:
    delivered: list[str] = []
    commits, statuses = await _commits(tmp_path, delivered)
    assert statuses == {"consumed": JOBS}
    assert sorted(delivered) == sorted(set(delivered)) and len(delivered) == JOBS
    # A chunk of FLIGHT jobs: the group commit of its attempts, the group
    # commit of its handles (which claims the next chunk to send), and one
    # transaction of the reclaim pass (its poll outcomes, the previous
    # chunk's `consumed` marks, the next claim). Around them (10): the
    # reservation, the first claims, the first create sent alone (a cold
    # circuit: one more group commit of each kind), the empty claims that
    # end each pass and the last chunk's marks.
    per_chunk = 3
    assert commits <= per_chunk * CHUNKS + 10, f"{commits} commits for {JOBS} jobs"
