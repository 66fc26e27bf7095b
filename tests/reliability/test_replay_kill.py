"""A `replay` of many rows SIGKILLed half-way through its deliveries (issue
10): every stored result is still delivered, each key's effect exactly once,
nothing lost, and no row is left held by the dead process."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import pytest

from reclaim_tui.core.fakes import fake_output_text
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.procs import write_jobs

pytestmark = pytest.mark.slow

MODEL = "gemini-flash-latest"
JOBS = 60


def ok(proc: object) -> None:
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


def test_a_replay_killed_half_way_loses_nothing(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace("replay-kill")
    flag = ws.root / "disk-full"
    flag.touch()
    ws.env_extra["RECLAIM_TEST_SINK_FAIL_FLAG"] = str(flag)
    texts = [f"replayed after a kill {i}" for i in range(JOBS)]
    keys = {idempotency_key(JobSpec(input=t, model=MODEL)): t for t in texts}
    ok(ws.tick(jobs=write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])))
    for _ in range(10):  # until every result is stored and waiting for its sink
        if {r["status"] for r in ws.view().rows().values()} == {"done"}:
            break
        time.sleep(max(0.0, ws.view().seconds_until_due() or 0.0) + 0.05)
        ok(ws.tick())
    assert {r["status"] for r in ws.view().rows().values()} == {"done"}

    flag.unlink()  # the disk has room again; an operator replays, and is killed
    time.sleep(max(0.0, max(r["next_at"] for r in ws.view().rows().values()) - time.time()) + 0.1)
    crash = {"RECLAIM_CRASH_AT": f"inside_sink:{JOBS // 2}"}
    killed = ws.cli("replay", "--concurrency", "1", env=crash)
    assert killed.returncode == -9, killed.stderr
    counts = Counter(r["status"] for r in ws.view().rows().values())
    # A batch's `consumed` is committed after its deliveries: the killed batch
    # is delivered again (at least once), its effect stays exactly once.
    assert counts["consumed"] < JOBS and len(ws.deliveries()) >= JOBS // 2 - 1, counts

    for run in ws.settle(confirm=True):
        ok(run)
    view = ws.view()
    rows = view.rows()
    assert Counter(r["status"] for r in rows.values()) == Counter(consumed=JOBS)
    assert all(r["lease_owner"] is None for r in rows.values())
    for key, text in keys.items():
        assert (ws.out / f"{key}.md").read_text(encoding="utf-8") == fake_output_text(text)
    delivered = Counter(d["idem"] for d in ws.deliveries())
    assert set(delivered) == set(keys)
    consumed = Counter(
        e.idem for e in view.events() if (e.from_status, e.to_status) == ("done", "consumed")
    )
    assert set(consumed.values()) == {1}
    record_figures(
        "replay_kill",
        jobs=JOBS,
        consumed_before_settle=counts["consumed"],
        deliveries=sum(delivered.values()),
        redeliveries=sum(delivered.values()) - JOBS,
        lost=0,
    )
