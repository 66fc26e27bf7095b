"""Nothing is sent, or paid for, that the operator did not ask for (issue 32),
through the real CLI in fresh processes against the emulator."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Actor, JobSpec, OrphanPolicy
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.demo import DEMO_MODELS
from reclaim_tui.demo.world import open_demo_engine
from reclaim_tui.errors import TransientReadError
from tests.e2e.test_cli_planning import AGENT, _until_plan_ready, ok
from tests.e2e.test_demo_trickle import Gate, _live_rows, _until
from tests.helpers import EmulatorProcess, run_cli
from tests.helpers.ledgerdb import LedgerView
from tests.helpers.procs import Workspace, write_jobs

PLANNING = {"agent_config": {"type": "deep-research", "collaborative_planning": True}}


def test_submit_file_sends_only_that_files_jobs(
    make_workspace: Callable[..., Workspace], tmp_path: Path
) -> None:
    ws = make_workspace()
    other = write_jobs(tmp_path / "other.jsonl", [{"input": "held back", "key": "other-1"}])
    one = write_jobs(tmp_path / "one.jsonl", [{"input": "send me", "key": "one-1"}])
    first = ws.cli("submit", str(other), "--no-send")
    assert first.returncode == 0, first.stderr
    second = ws.cli("submit", str(one), "--json")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert (report["counts"].get("inserted"), report["counts"].get("sent")) == (1, 1), report
    rows = ws.view().rows()
    assert rows["one-1"]["status"] == "submitted"
    # The --no-send file's job is left for a pass: not sent, no attempt spent.
    assert (rows["other-1"]["status"], rows["other-1"]["attempts"]) == ("reserving", 0)
    # Submitting that file itself sends it (a job of FILE, already reserved).
    again = ws.cli("submit", str(other), "--json")
    assert json.loads(again.stdout)["counts"].get("sent") == 1, again.stdout


async def test_the_demo_trickle_is_the_demos_and_waits_for_the_loop(tmp_path: Path) -> None:
    """The trickle's jobs were sent at once, under the operator's actor
    `console`: `P` did not stop them. They are reserved as `demo` and left to
    the loop's passes."""
    settings = Settings(
        db=str(tmp_path / "demo.db"),
        out=str(tmp_path / "articles"),
        model=DEMO_MODELS[0],
        orphan_policy=OrphanPolicy.HOLD,
        emulator_lookup=False,
        actor=Actor.CONSOLE,
    )
    gate = Gate()
    async with open_demo_engine(
        settings, actor=Actor.CONSOLE, jobs=2, seed=7, latency=(0.2, 0.5), sleep=gate.sleep
    ) as engine:
        ledger = engine.ledger
        gate.release(3)

        async def three_arrived() -> bool:
            return len(await _live_rows(ledger)) == 3

        assert await _until(three_arrived)
        statuses = await ledger.select("SELECT status, attempts FROM jobs")
        assert {tuple(r) for r in statuses} == {("reserving", 0)}, statuses
        actors = await ledger.select("SELECT DISTINCT actor FROM events")
        assert [r[0] for r in actors] == ["demo"]


def _cancel_pending_ledger(db: Path) -> str:
    """A ledger whose one row is cancelled with its remote cancel pending."""
    spec = JobSpec(input="runs a long time", model="m")
    idem = idempotency_key(spec)

    async def build() -> None:
        clock = ManualClock(time.time())
        fake = FakeBackend(clock=clock, latency=None)
        ledger = await open_ledger(db, clock=clock)
        try:
            engine = Engine(ledger, fake, DirectorySink(db.parent / "out"))
            await engine.submit([spec])
            handle = fake.handle_for(idem)
            fake.cancel_faults[handle] = [TransientReadError("refused", cause="network")]
            row = await engine.operator.cancel(idem, actor=Actor.CLI)
            assert row.held
        finally:
            await ledger.close()

    asyncio.run(build())
    return idem


def test_retry_of_a_cancel_pending_row_is_refused_and_the_cancel_kept(tmp_path: Path) -> None:
    """It dropped the cancel: the old interaction was never cancelled and a
    new create was sent."""
    db = tmp_path / "ledger.db"
    idem = _cancel_pending_ledger(db)
    out = run_cli(["retry", "--db", str(db), idem])
    assert out.returncode == 5, (out.stdout, out.stderr)
    assert "cancel pending" in out.stderr and "retry once" in out.stderr, out.stderr
    row = LedgerView(db).rows()[idem]
    assert (row["status"], row["held"]) == ("cancelled", 1)
    assert str(row["last_error"]).startswith("cancel pending")


def test_cancel_declines_a_research_plan(tmp_path: Path) -> None:
    """A plan could not be dropped: cancel was refused ("had already
    completed … the next tick stores and delivers its result")."""
    with EmulatorProcess(tmp_path, flags=("--agent-time-scale", "0.004")) as emulator:
        ws = Workspace(tmp_path / "ws", emulator=emulator)
        job = {"agent": AGENT, "input": "Research Google TPUs.", "config": PLANNING}
        key = idempotency_key(JobSpec(input=job["input"], model="", agent=AGENT, config=PLANNING))
        ok(ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [job])))
        _until_plan_ready(ws, key, None)
        declined = ws.cli("cancel", key)
        ok(declined)
        row = ws.view().rows()[key]
        assert (row["status"], row["held"]) == ("cancelled", 0), row
        notes = [e.note or "" for e in ws.view().events(key)]
        assert any("declined the research plan" in n for n in notes), notes
        for _ in range(2):
            ok(ws.tick())
        assert len(emulator.find(key)) == 1  # the plan's turn only: no research sent
        assert ws.deliveries() == []
