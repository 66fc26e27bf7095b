"""Zombie writers: a real `tick` is SIGSTOPped while it holds a row, past its
lease; another tick takes the row over and finishes it; then the first one is
SIGCONTed. Every write of the zombie is a compare-and-set on its lease, so it
changes nothing: no event, no column, no second `consumed`."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig, PassReport
from reclaim_tui.core.fakes import FakeBackend, fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, RemoteInteraction, Status, StoredResult
from reclaim_tui.core.sinks import CallableSink, DirectorySink
from tests.helpers import EmulatorProcess, LedgerView, Workspace, record_figures
from tests.helpers.ledgerdb import account_for_creates
from tests.helpers.procs import write_jobs

MODEL = "gemini-flash-latest"
#: The shortest lease the CLI accepts for these timeouts: less waiting for it to run out.
SHORT_LEASE = ("--request-timeout", "0.5", "--busy-timeout", "0.5", "--lease-seconds", "3")


def key_of(text: str) -> str:
    return idempotency_key(JobSpec(input=text, model=MODEL))


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def wait_for(predicate: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def sleep_past_lease(ws: Workspace, key: str, owner_pid: int) -> None:
    row = ws.view().rows()[key]
    assert row["lease_owner"] and f"|{owner_pid}|" in row["lease_owner"], row["lease_owner"]
    time.sleep(max(0.0, row["lease_until"] - time.time()) + 0.3)


def snapshot(ws: Workspace, key: str) -> tuple[object, ...]:
    view = ws.view()
    return view.rows()[key], view.events(key), view.results().get(key)


def resume_and_finish(zombie: subprocess.Popen[bytes]) -> str:
    """SIGCONT the zombie and wait for it: its writes are refused, and it exits 0."""
    zombie.send_signal(signal.SIGCONT)
    code = zombie.wait(60)
    log: str = zombie.log_path.read_text()  # type: ignore[attr-defined]
    assert code == 0, (code, log)
    assert "Traceback" not in log and "locked" not in log
    return log


@pytest.mark.slow
def test_zombie_inside_the_sink_changes_nothing(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path) as emu:
        ws = Workspace(tmp_path / "sink-zombie", emulator=emu, extra_flags=SHORT_LEASE)
        text = "zombie in the sink"
        key = key_of(text)
        ok(ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [{"input": text}])))
        time.sleep(max(0.0, ws.view().seconds_until_due() or 0.0) + 0.05)

        entered = ws.root / "entered"
        zombie = ws.popen_tick(
            env={"RECLAIM_TEST_SINK_ENTERED": str(entered), "RECLAIM_TEST_SINK_SLEEP": "1"},
            log_name="zombie.log",
        )
        try:
            wait_for(entered.exists)
            zombie.send_signal(signal.SIGSTOP)
            assert ws.view().rows()[key]["status"] == "done"
            sleep_past_lease(ws, key, zombie.pid)

            takeover = ws.tick()  # replays the stored result, consumes the row
            ok(takeover)
            assert "consumed=1" in takeover.stdout
            before = snapshot(ws, key)
            assert before[0]["status"] == "consumed"  # type: ignore[index]
        finally:
            resume_and_finish(zombie)
        after = snapshot(ws, key)
        assert after == before, "the zombie wrote after it lost its lease"

        # At-least-once delivery (the zombie's sink call finished late),
        # exactly-once effect: one key, one file with the right bytes.
        delivered = Counter(d["idem"] for d in ws.deliveries())
        assert delivered == Counter({key: 2})
        assert (ws.out / f"{key}.md").read_text(encoding="utf-8") == fake_output_text(text)
        consumed = [e for e in ws.view().events(key) if e.to_status == "consumed"]
        assert len(consumed) == 1
        record_figures(
            "zombie_in_sink",
            zombie_writes_after_takeover=0,
            deliveries=2,
            consumed_events=1,
            lost=0,
        )


@pytest.mark.slow
def test_zombie_in_a_slow_create_changes_nothing(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path) as emu:
        ws = Workspace(tmp_path / "create-zombie", emulator=emu, extra_flags=SHORT_LEASE)
        text = "zombie in create"
        key = key_of(text)
        emu.set_faults(slow_rate=1.0, slow_seconds=3.0)
        zombie = ws.popen_tick(
            jobs=write_jobs(ws.root / "jobs.jsonl", [{"input": text}]), log_name="zombie.log"
        )
        try:
            # The emulator stores an interaction before its slow answer.
            wait_for(lambda: emu.create_counts()[key] == 1)
            zombie.send_signal(signal.SIGSTOP)
            emu.set_faults()
            sleep_past_lease(ws, key, zombie.pid)

            # The holder is alive (stopped) but its lease ran out: the orphan
            # is resubmitted (no lookup here) and recorded as a possible duplicate.
            first = ws.tick()
            ok(first)
            assert "resubmitted=1" in first.stdout
            ws.settle(confirm=False)
            before = snapshot(ws, key)
            assert before[0]["status"] == "consumed"  # type: ignore[index]
        finally:
            resume_and_finish(zombie)
        after = snapshot(ws, key)
        assert after == before, "the zombie wrote after it lost its lease"
        view = ws.view()
        assert emu.create_counts()[key] == 2
        assert view.duplicate_notes(key) == 1
        assert account_for_creates(view, emu.creates_by_idem()) == []
        assert Counter(d["idem"] for d in ws.deliveries()) == Counter({key: 1})
        record_figures(
            "zombie_in_create",
            zombie_writes_after_takeover=0,
            creates=2,
            duplicates_recorded=1,
            deliveries=1,
            lost=0,
        )


async def test_a_zombie_does_not_report_writes_it_lost(tmp_path: Path) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    fake = FakeBackend(clock=clock, latency=0.0)
    config = EngineConfig(lease_seconds=30)
    delivered: list[str] = []
    takeover = PassReport()

    async def sink(idem: str, result: StoredResult) -> None:
        delivered.append(idem)
        if len(delivered) == 1:
            # The first holder stalls here past its lease; another pass takes over.
            clock.advance(31)
            takeover.merge(await other.replay())

    zombie = Engine(ledger, fake, CallableSink(sink), config=config, owner="z|1|zombie")
    other = Engine(ledger, fake, CallableSink(sink), config=config, owner="z|1|other")
    try:
        spec = JobSpec(input="stalled in the sink", model="m")
        await zombie.tick([spec])
        clock.advance(3)
        report = await zombie.tick()
        row = await ledger.get(idempotency_key(spec))
        assert row is not None and row.status == Status.CONSUMED
        assert takeover.counts["consumed"] == 1 and len(delivered) == 2
        consumed = [e for e in await ledger.events(row.idem) if e.to_status == "consumed"]
        assert len(consumed) == 1
        assert report.counts["consumed"] == 0, "the zombie reports a consume it did not write"
    finally:
        await ledger.close()


async def test_a_late_create_of_a_stalled_holder_is_accounted_for(tmp_path: Path) -> None:
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=True)
    config = EngineConfig(lease_seconds=30)
    sink = DirectorySink(tmp_path / "out")
    stalled = asyncio.Event()
    resume = asyncio.Event()

    class Stalling(FakeBackend):
        async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
            if not resume.is_set():
                stalled.set()  # claimed, attempt committed, request not sent yet
                await resume.wait()
            return await fake.create(spec, idem)

    slow = Stalling(clock=clock, latency=0.0, supports_lookup=True)
    slow.find_by_label = fake.find_by_label  # type: ignore[method-assign]
    slow.get = fake.get  # type: ignore[method-assign]
    holder = Engine(ledger, slow, sink, config=config, owner="z|1|stalled")
    other = Engine(ledger, fake, sink, config=config, owner="z|1|other")
    try:
        spec = JobSpec(input="sent late", model="m")
        idem = idempotency_key(spec)
        first = asyncio.create_task(holder.tick([spec]))
        await stalled.wait()
        # The holder is alive (stopped), its lease ran out, and so did the
        # request window after which a lookup that finds nothing is trusted.
        clock.advance(61)
        await other.tick()  # lookup finds nothing: sends again, a possible duplicate
        resume.set()
        await first  # the stalled holder's create goes out now
        row = await ledger.get(idem)
        assert row is not None and row.status == Status.SUBMITTED
        assert fake.creates_per_label[idem] == 2
        view = LedgerView(tmp_path / "ledger.db")
        creates = {idem: [{"id": h} for h, r in fake.remotes.items() if r.idem == idem]}
        assert account_for_creates(view, creates) == []
    finally:
        await ledger.close()
