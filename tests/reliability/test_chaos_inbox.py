"""Chaos soak with the webhook inbox and **without** the emulator's lookup
(issue 12): workers SIGKILLed at random, 5% of requests failed with 500, 5%
of creates accepted and their answers dropped, webhook deliveries duplicated,
reordered and lost (then retried), and the inbox itself killed and restarted.

The claim: no create the emulator accepted is ever followed by a second one
for the same job — the inbox names the job of an interaction whose create
answer was lost, and recovery adopts it — and every job is consumed once.
A create refused with 500 created nothing; its job is resent after
--webhook-grace and recorded as a possible duplicate, which it is not.

    RECLAIM_SOAK_SECONDS / _JOBS / _WORKERS / _SEED   as in test_chaos.py
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from reclaim_tui.cli.common import EXIT_API_UNAVAILABLE
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.inbox import InboxProcess
from tests.helpers.procs import write_jobs
from tests.reliability.test_chaos import BUSY_FLAGS, JOBS, SECONDS, SEED, WORKERS, WorkerSlot

pytestmark = pytest.mark.slow

GRACE = 45.0  # above the jobs' 2 s, the delivery retries' 2 s cap, and a loaded machine


def test_chaos_with_the_inbox_never_creates_an_accepted_job_twice(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    flags = (
        "--rate-500", "0.05", "--drop-rate", "0.05", "--latency-max", "2",
        "--webhook-duplicate-rate", "0.05", "--webhook-drop-rate", "0.05",
        "--webhook-reorder-window", "0.3",
        "--webhook-backoff-base", "0.2", "--webhook-backoff-cap", "2",
    )  # fmt: skip
    with EmulatorProcess(tmp_path, latency=0.2, seed=SEED, flags=flags) as emu:
        ws = Workspace(tmp_path / "chaos", emulator=emu, lookup=False)
        inbox = InboxProcess(ws.db, f"{emu.base_url}/.well-known/jwks.json", tmp_path)
        ws.extra_flags = (
            *BUSY_FLAGS,
            "--webhook-url", inbox.url, "--webhook-grace", str(GRACE), "--webhook-poll", "30",
        )  # fmt: skip
        texts = [f"inbox chaos job {i} of {JOBS}" for i in range(JOBS)]
        keys = {idempotency_key(JobSpec(input=t, model="gemini-flash-latest")): t for t in texts}
        jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": t} for t in texts])
        inbox.start()
        stop = threading.Event()
        slots = [WorkerSlot(ws, jobs, i, stop) for i in range(WORKERS)]
        for slot in slots:
            slot.thread.start()
        deadline = time.monotonic() + SECONDS
        kills_sent = 0
        inbox_killed = False
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.5, 2.0))
            kills_sent += rng.choice(slots).kill()
            if not inbox_killed and time.monotonic() > deadline - SECONDS / 2:
                inbox.kill()  # the emulator retries what it cannot deliver
                time.sleep(1.0)
                inbox.start()
                inbox_killed = True
        stop.set()
        for slot in slots:
            slot.thread.join(180)
        try:
            failures = [f for slot in slots for f in slot.failures]
            assert failures == [], failures[:3]
            emu.set_faults()  # chaos over: clean ticks until everything is terminal
            for run in ws.settle(max_ticks=80, max_wait=3.0):
                assert run.returncode in (0, EXIT_API_UNAVAILABLE), run.stderr
        finally:
            inbox.stop()

        view = ws.view()
        rows = view.rows()
        assert set(rows) == set(keys)
        assert Counter(r["status"] for r in rows.values()) == Counter(consumed=JOBS)
        assert view.bad_transitions() == [] and view.consumed_without_done() == []
        delivered = Counter(d["idem"] for d in ws.deliveries())
        assert set(delivered) == set(keys)
        creates = emu.creates_by_idem()
        accepted_twice = {k: len(v) for k, v in creates.items() if len(v) > 1}
        assert accepted_twice == {}, accepted_twice
        stats = emu.stats()
        events = view._query("SELECT COUNT(*) AS n FROM inbox")[0]["n"]
        adopted = [e for e in view.events() if "found by webhook event" in e.note]
        assert sum(slot.killed for slot in slots) > 0, "no worker was killed: no crash tested"
        counters = emu.admin.webhook_deliveries()["counters"]
        record_figures(
            "chaos_soak_inbox",
            seconds=SECONDS,
            workers=WORKERS,
            jobs=JOBS,
            kills_sent=kills_sent,
            kills_survived=sum(slot.killed for slot in slots),
            inbox_restarts=inbox.starts - 1,
            creates=sum(len(v) for v in creates.values()),
            dropped_creates=stats["dropped_total"],
            create_5xx=stats["calls"]["create"] - stats["creates_total"],
            accepted_twice=len(accepted_twice),
            duplicates_recorded=sum(r["duplicates"] for r in rows.values()),
            adopted_from_events=len(adopted),
            events_kept=events,
            webhook_attempts=counters["attempts"],
            webhook_failed_attempts=counters["failed_attempts"],
            lost=JOBS - sum(1 for r in rows.values() if r["status"] == "consumed"),
        )
