"""Benchmark 2: realistic latency — slow answers, long jobs.

The emulator (its own process) answers every request after 50 ms (slow_rate 1,
slow_seconds 0.05) and each job runs 2–30 s (a seeded uniform draw per job). Two
measurements, both designs against the same emulator process:

  end to end  N jobs from an empty ledger until every one is consumed: wall time,
              API calls per job (emulator stats), worker CPU seconds (RUSAGE_CHILDREN
              of the worker process). reclaim-tui ticks every 1 s in one process;
              the baseline runs --ticks many --interval 1. For reclaim-tui every row's
              `polls` is checked against ⌈log2(duration / 2 s)⌉ + 2.
  sweep       one reclaim pass over N in-flight jobs (jobs that do not finish): the
              time of `Engine.reclaim()` polling each row once (its clock held at the
              pass's start) and of the baseline's `reclaim(db)`.

    python benchmarks/latency.py [--jobs 1000] [--runs 3] [--concurrency 16]
    python benchmarks/latency.py --jobs 200 --runs 1        # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, load_baseline, median, table
from _emulator import (
    API_KEY,
    EmulatorProcess,
    baseline_cmd,
    ours_cmd,
    run_worker,
    write_jobs,
)

SLOW = ("--slow-rate", "1", "--slow-seconds", "0.05")
LOW, HIGH = 2.0, 30.0


def duration(seed: int, handle: str) -> float:
    """The job's run time as the emulator drew it (emulator/state.py `_ready_at`)."""
    seq = int(handle.rsplit("-", 1)[1])
    return random.Random(f"{seed}:{seq}").uniform(LOW, HIGH)


def poll_bound(seconds: float) -> int:
    return math.ceil(math.log2(seconds / 2.0)) + 2


def check_polls(db: Path, seed: int) -> tuple[int, float, int]:
    """(rows over the bound, mean polls per job, worst excess) from reclaim-tui's ledger."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT handle, polls FROM jobs").fetchall()
    over = [polls - poll_bound(duration(seed, handle)) for handle, polls in rows]
    bad = [x for x in over if x > 0]
    return len(bad), sum(p for _, p in rows) / len(rows), max(over)


def end_to_end(emu: EmulatorProcess, which: str, a: argparse.Namespace, run: int) -> dict[str, Any]:
    emu.reset()
    with tempfile.TemporaryDirectory(prefix=f"lat-{which}-") as d:
        work = Path(d)
        jobs, db, out = work / "jobs.jsonl", work / "ledger.db", work / "out"
        write_jobs(jobs, a.jobs, tag=f"r{run}-")
        if which == "ours":
            cmd = ours_cmd(emu.base_url, db, jobs, out, interval=1, concurrency=a.concurrency)
        else:
            cmd = baseline_cmd(emu.base_url, db, jobs, out, ticks=100_000, interval=1)
        r = run_worker(cmd, db, a.jobs)
        calls = emu.stats()["calls"]
        result = {
            "seconds": r.seconds,
            "cpu": r.cpu,
            "calls_per_job": (calls["create"] + calls["get"]) / a.jobs,
            "gets_per_job": calls["get"] / a.jobs,
        }
        if which == "ours":
            bad, mean_polls, worst = check_polls(db, a.seed)
            result.update(over_bound=bad, mean_polls=mean_polls, worst_excess=worst)
    return result


# -- sweep: one reclaim pass over N in-flight jobs, in a fresh process ----------------------
async def _sweep_ours(base_url: str, n: int, concurrency: int, work: Path) -> dict[str, float]:
    from reclaim_tui.bootstrap import open_engine
    from reclaim_tui.config import Settings
    from reclaim_tui.core.models import Actor, JobSpec

    settings = Settings(
        db=str(work / "ours.db"),
        base_url=base_url,
        out=str(work / "out"),
        concurrency=concurrency or None,
    ).validate()
    async with open_engine(settings, actor=Actor.TICK) as engine:
        jobs = [JobSpec(input=f"sweep job {i}", model="gemini-flash-latest") for i in range(n)]
        await engine.submit(jobs)
        with sqlite3.connect(settings.db) as conn:
            due = conn.execute("SELECT MAX(next_at) FROM jobs WHERE status = 'submitted'")
            last_due = float(due.fetchone()[0] or 0)
        await asyncio.sleep(max(0.0, last_due - time.time()) + 0.1)  # every row due now
        # The sweep is the time until every row has been polled once. Polls sit on a
        # grid of ages (submitted_at + first_poll·2^polls, and `now` when that is
        # past), so rows polled late are due again at once and the same `reclaim()`
        # call polls them again: its length and poll count are reported beside.
        polled: set[str] = set()
        all_once = math.nan
        get = engine.backend.get

        async def counting_get(handle: str) -> Any:
            nonlocal all_once
            out = await get(handle)
            polled.add(handle)
            if len(polled) == n and math.isnan(all_once):
                all_once = time.perf_counter() - start
            return out

        engine.backend.get = counting_get  # type: ignore[method-assign]
        start = time.perf_counter()
        report = await engine.reclaim()
        elapsed = time.perf_counter() - start
    assert len(polled) == n, report.summary()
    return {"seconds": all_once, "call_seconds": elapsed, "polls": report.counts["polled"]}


async def _create_handles(base_url: str, n: int, concurrency: int) -> list[tuple[str, str]]:
    from reclaim_tui.core.gemini import GeminiBackend
    from reclaim_tui.core.models import JobSpec

    backend = GeminiBackend(API_KEY, base_url)
    limit = asyncio.Semaphore(concurrency)

    async def one(i: int) -> tuple[str, str]:
        async with limit:
            idem = f"{i:032x}"
            made = await backend.create(JobSpec(input=f"sweep job {i}", model="m"), idem)
            return idem, made.id

    try:
        return await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await backend.aclose()


def _sweep_baseline(base_url: str, n: int, work: Path) -> float:
    from google import genai
    from google.genai import types

    # The in-flight rows are made quickly by our backend; only the baseline's own
    # reclaim pass (sequential gets through the stock SDK) is timed.
    handles = asyncio.run(_create_handles(base_url, n, 32))
    seed = load_baseline()
    seed.client = genai.Client(api_key=API_KEY, http_options=types.HttpOptions(base_url=base_url))
    db = seed.open_ledger(str(work / "seed.db"))
    db.executemany(
        "INSERT INTO jobs(idem, handle, status, submitted_at, updated_at)"
        " VALUES (?, ?, 'submitted', 0, 0)",
        handles,
    )
    seed.client.interactions.get(handles[0][1])  # warm the client, like a tick would
    start = time.perf_counter()
    seed.reclaim(db, on_result=lambda idem, op: None)
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed


def _sweep(emu: EmulatorProcess, which: str, a: argparse.Namespace) -> dict[str, float]:
    emu.reset()
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child-sweep",
            which,
            "--base-url",
            emu.base_url,
            "--jobs",
            str(a.jobs),
            "--concurrency",
            str(a.concurrency),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    if done.returncode != 0:
        raise RuntimeError(f"sweep {which} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    if isinstance(out, dict):
        return {k: float(v) for k, v in out.items()}
    return {"seconds": float(out), "call_seconds": float(out), "polls": float(a.jobs)}


def _child_sweep(a: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as d:
        if a.child_sweep == "ours":
            out: Any = asyncio.run(_sweep_ours(a.base_url, a.jobs, a.concurrency, Path(d)))
        else:
            out = _sweep_baseline(a.base_url, a.jobs, Path(d))
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--concurrency",
        type=int,
        default=0,
        help="reclaim-tui --concurrency (0: its adaptive default, 16 growing to 64)",
    )
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--skip-e2e", action="store_true", help="Only the sweep.")
    ap.add_argument("--child-sweep", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    ap.add_argument("--base-url", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_sweep:
        _child_sweep(a)
        return
    designs = ["ours"] + ([] if a.skip_baseline else ["baseline"])
    e2e: dict[str, list[dict[str, Any]]] = {w: [] for w in designs}
    sweeps: dict[str, list[dict[str, float]]] = {w: [] for w in designs}
    jobs_flags = ("--latency", str(LOW), "--latency-max", str(HIGH), "--seed", str(a.seed))
    with EmulatorProcess(*jobs_flags, *SLOW) as emu:
        for run in range(0 if a.skip_e2e else a.runs):
            for which in designs:
                e2e[which].append(r := end_to_end(emu, which, a, run))
                print(f"  run {run + 1} {which}: {json.dumps(r)}", file=sys.stderr, flush=True)
    if not a.skip_sweep:
        with EmulatorProcess("--latency", "1000000", *SLOW) as emu:
            for _ in range(a.runs):
                for which in designs:
                    sweeps[which].append(s := _sweep(emu, which, a))
                    print(f"  sweep {which}: {json.dumps(s)}", file=sys.stderr, flush=True)
    labels = {"ours": f"reclaim-tui (concurrency {a.concurrency})", "baseline": "baseline (seed)"}
    rows = []
    for which in designs:
        runs = e2e[which]
        rows.append(
            [
                labels[which],
                a.jobs,
                median([r["seconds"] for r in runs]),
                median([r["calls_per_job"] for r in runs]),
                median([r["gets_per_job"] for r in runs]),
                median([r["cpu"] for r in runs]),
                median([s["seconds"] for s in sweeps[which]]) if sweeps[which] else "-",
            ]
        )
    print(
        f"Latency: every answer +50 ms, jobs run {LOW:g}-{HIGH:g} s (seed {a.seed});"
        f" {a.runs} runs, medians"
    )
    print(
        table(
            [
                "design",
                "jobs",
                "wall s",
                "API calls/job",
                "gets/job",
                "worker CPU s",
                f"sweep s ({a.jobs} in flight)",
            ],
            rows,
        )
    )
    ours = e2e["ours"]
    if ours:
        print(
            f"reclaim-tui polls: mean {median([r['mean_polls'] for r in ours]):.2f}/job;"
            f" rows over ⌈log2(d/2s)⌉+2: {max(r['over_bound'] for r in ours)}"
            f" (worst excess {max(r['worst_excess'] for r in ours)})"
        )
    if sweeps["ours"]:
        runs = sweeps["ours"]
        print(
            f"reclaim-tui sweep: every row polled once after"
            f" {median([r['seconds'] for r in runs]):.2f} s; the reclaim() call went on for"
            f" {median([r['call_seconds'] for r in runs]):.2f} s and made"
            f" {median([r['polls'] for r in runs]):.0f} polls for {a.jobs} rows"
        )
    if len(rows) == 2 and ours:
        print(
            f"ratios (baseline / reclaim-tui): wall {rows[1][2] / rows[0][2]:.1f}x,"
            f" CPU {rows[1][5] / rows[0][5]:.1f}x, API calls {rows[1][3] / rows[0][3]:.1f}x"
            + (f", sweep {rows[1][6] / rows[0][6]:.1f}x" if sweeps["ours"] else "")
        )


if __name__ == "__main__":
    main()
