"""No hidden retries: the SDK's own retries are off, so every create attempt the
ledger records is exactly one POST at the emulator (its `create_posts_received`
counter), also when the interaction was created and the answer was lost (503
after accepting) or never came in time (slow answer past the request timeout)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import MaybeCreatedError
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.procs import write_jobs

MODEL = "gemini-flash-latest"
SENDING = re.compile(r"attempt \d+: sending create")


def posts(emu: EmulatorProcess) -> int:
    return int(emu.stats()["calls"]["create_posts_received"])


def attempts(ws: Workspace, key: str) -> int:
    return int(ws.view().rows()[key]["attempts"])


def sends(ws: Workspace, key: str) -> int:
    """The create attempts the ledger's history records for `key`."""
    return sum(1 for e in ws.view().events(key) if SENDING.fullmatch(e.note))


def wait_until_due(ws: Workspace) -> None:
    wait = ws.view().seconds_until_due()
    if wait is not None and wait > 0:
        time.sleep(wait + 0.05)


@pytest.mark.slow
def test_one_post_per_attempt_when_the_answer_is_lost_or_late(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path) as emu:
        # 1. Accepted, stored, then answered 503 (a gateway that lost the answer).
        emu.set_faults(drop_rate=1.0, drop_mode="503")
        lost = Workspace(tmp_path / "lost", emulator=emu)
        text = "answer lost after accept"
        key = idempotency_key(JobSpec(input=text, model=MODEL))
        tried = [(lost, key)]
        proc = lost.tick(jobs=write_jobs(lost.root / "j.jsonl", [{"input": text}]))
        assert proc.returncode == 0 and "MaybeCreatedError[503]" in proc.stderr
        assert (posts(emu), attempts(lost, key)) == (1, 1)
        assert emu.stats()["creates_total"] == 1
        wait_until_due(lost)
        proc = lost.tick()  # the orphan is resubmitted (no lookup): attempt 2
        assert proc.returncode == 0 and "resubmitted=1" in proc.stdout
        assert (posts(emu), attempts(lost, key)) == (2, 2)
        assert lost.view().duplicate_notes(key) == 1

        # 2. Created, but the answer comes after the 1 s request timeout.
        emu.set_faults(slow_rate=1.0, slow_seconds=2.5)
        slow = Workspace(tmp_path / "slow", emulator=emu, lookup=True)
        text = "answer too late"
        key = idempotency_key(JobSpec(input=text, model=MODEL))
        tried.append((slow, key))
        before = posts(emu)
        proc = slow.tick(jobs=write_jobs(slow.root / "j.jsonl", [{"input": text}]))
        assert proc.returncode == 0 and "MaybeCreatedError" in proc.stderr, proc.stderr
        assert (posts(emu) - before, attempts(slow, key)) == (1, 1)
        emu.set_faults()
        wait_until_due(slow)
        proc = slow.tick()  # adopted by label: no second POST
        assert proc.returncode == 0 and "adopted=1" in proc.stdout
        assert posts(emu) - before == 1 and emu.create_counts()[key] == 1
        slow.settle(confirm=False)
        assert slow.view().rows()[key]["status"] == "consumed"

        # 3. Refused outright (429, 500): still one POST per attempt.
        for code in ("rate_429", "rate_500"):
            emu.set_faults(create={code: 1.0})
            ws = Workspace(tmp_path / code, emulator=emu)
            text = f"refused with {code}"
            key = idempotency_key(JobSpec(input=text, model=MODEL))
            before = posts(emu)
            proc = ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": text}]))
            assert proc.returncode == 0
            # A 429 proves nothing was created and is not the job's fault: the
            # attempt is recorded in the history but given back to the budget.
            spent = 0 if code == "rate_429" else 1
            assert (posts(emu) - before, attempts(ws, key)) == (1, spent), code
            notes = [e.note for e in ws.view().events(key)]
            assert "attempt 1: sending create" in notes, notes
            tried.append((ws, key))
        emu.set_faults()
        # Every attempt any of these ledgers records is one POST the emulator received.
        recorded = sum(sends(w, k) for w, k in tried)
        assert posts(emu) == recorded, (posts(emu), recorded)
        record_figures(
            "no_hidden_retries",
            posts_total=posts(emu),
            creates_total=emu.stats()["creates_total"],
            attempts_recorded=recorded,
        )


async def test_max_attempts_bounds_creates_whose_outcome_is_unknown(tmp_path: Path) -> None:
    """Regression (was unbounded: 4 creates at --max-attempts 2 after 5 ticks)."""
    clock = ManualClock()
    ledger = await open_ledger(tmp_path / "ledger.db", clock=clock)
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=False)
    # Every create is accepted and its answer lost.
    fake.create_faults = [(MaybeCreatedError("503 after accept", 503), True)] * 20
    engine = Engine(
        ledger, fake, DirectorySink(tmp_path / "out"), config=EngineConfig(max_attempts=2)
    )
    try:
        spec = JobSpec(input="answer always lost", model="m")
        await engine.tick([spec])
        for _ in range(6):
            clock.advance(400)
            await engine.tick()
        row = await ledger.get(idempotency_key(spec))
        assert row is not None
        assert fake.creates_per_label[row.idem] <= 2, (
            f"{fake.creates_per_label[row.idem]} interactions created at max_attempts=2"
            f" (row {row.status}, attempts {row.attempts})"
        )
        assert row.status == Status.FAILED or row.held
        assert "unknown" in (row.last_error or "")
    finally:
        await ledger.close()
