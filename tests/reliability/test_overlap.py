"""Overlapping ticks: 8 real `tick` processes at once on one ledger file, in
repeated passes. Leases make every job created once and consumed once, and
the write lock never escapes as "database is locked"."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable

import pytest

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.ledgerdb import account_for_creates
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.slow

PROCESSES = 8
JOBS = 500


def test_eight_ticks_at_once_create_and_consume_each_job_once(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess, db_url: str
) -> None:
    """On a SQLite file, and on PostgreSQL as eight hosts (their own owner
    identities: claims meet FOR UPDATE SKIP LOCKED, not a file lock)."""
    on_pg = db_url.startswith("postgresql://")
    ws = make_workspace("overlap", db_url=db_url if on_pg else None)
    # The default busy timeout (10 s), as a user's cron runs: the test suite's
    # 1 s let a writer time out as "database is locked" when the parallel
    # suite loaded the machine; the claim under test is the leases' (each
    # job created and consumed once), and that no tick ever sees the lock.
    ws.extra_flags = ("--busy-timeout", "10", "--lease-seconds", "40")
    engine = "postgresql" if on_pg else "sqlite"
    texts = [f"overlap job {i} on {engine}" for i in range(JOBS)]
    keys = {idempotency_key(JobSpec(input=t, model="gemini-flash-latest")) for t in texts}
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])

    inserted = 0
    walls: list[float] = []
    passes = 0
    for passes in range(1, 6):
        started = time.monotonic()
        procs = [
            ws.popen_tick(
                jobs=jobs,
                log_name=f"pass{passes}-{i}.log",
                env={"RECLAIM_OWNER_HOST": f"host-{i}"} if on_pg else None,
            )
            for i in range(PROCESSES)
        ]
        for proc in procs:
            code = proc.wait(180)
            log = proc.log_path.read_text()  # type: ignore[attr-defined]
            assert code == 0, log
            assert "locked" not in log and "Traceback" not in log, log
            found = re.search(r"inserted=(\d+)", log)
            inserted += int(found.group(1)) if found else 0
        walls.append(time.monotonic() - started)
        if ws.view().quiescent():
            break
        wait = ws.view().seconds_until_due()
        if wait and wait > 0:
            time.sleep(wait + 0.05)
    ws.settle()

    rows = ws.view().rows()
    assert inserted == JOBS, "each job is reserved by exactly one of the racing ticks"
    assert set(rows) == keys
    assert Counter(r["status"] for r in rows.values()) == Counter(consumed=JOBS)
    creates = emulator.creates_by_idem()
    per_key = Counter(len(creates.get(k, [])) for k in keys)
    assert per_key == Counter({1: JOBS}), per_key
    delivered = Counter(d["idem"] for d in ws.deliveries())
    assert set(delivered) == keys and set(delivered.values()) == {1}
    view = ws.view()
    assert view.bad_transitions() == [] and view.consumed_without_done() == []
    assert account_for_creates(view, {k: creates[k] for k in keys}) == []
    record_figures(
        "overlap" if not on_pg else "overlap_postgres",
        processes=PROCESSES,
        passes=passes,
        jobs=JOBS,
        creates=sum(len(creates[k]) for k in keys),
        consumed=JOBS,
        deliveries=sum(delivered.values()),
        slowest_pass_s=round(max(walls), 2),
        lost=0,
    )
