"""Benchmark 4: the ledger alone.

N jobs through every state (reserving → submitted → done → consumed) with
the in-memory fake backend and a no-op sink, `synchronous=FULL`, on a real
file. Prints jobs/s and peak memory (tracemalloc + ru_maxrss), median of
--runs. Side by side: the original design's ledger code (baseline
seed_ledger.py) driven with a stub client, i.e. the same SQLite work it does
per job, with no network either.

    python benchmarks/ledger_only.py [--jobs 100000] [--runs 3] [--pg auto|URL] [--huey]

`--huey` adds an anchor from outside: huey's SqliteHuey (a task queue people
pick for one machine; `pip install huey`) with fsync on, each job enqueued,
dequeued, executed and its result stored, on the same kind of file. It keeps no
history, no leases and no spec: a floor for what one SQLite queue costs per
job, not a like-for-like ledger. Skipped, and said, when huey is not installed.

`--pg` adds the same run on PostgreSQL (synchronous_commit=on; `auto`: a
throwaway local server, see benchmarks/postgres.py), a database per run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_baseline, median, table

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def run_ours(
    n: int,
    workdir: Path,
    batch: int,
    db: str = "",
    *,
    concurrency: int = 64,
    prepare: Callable[[Ledger], Awaitable[None]] | None = None,
) -> tuple[float, float]:
    """N jobs through every state; (jobs/s, peak RSS MiB). `prepare` runs on the
    fresh ledger before the clock starts (ledger_profile.py's schema variants)."""
    clock = ManualClock()
    ledger = await open_ledger(db or workdir / "ours.db", clock=clock)
    if prepare is not None:
        await prepare(ledger)
    fake = FakeBackend(clock=clock, latency=0.0)
    engine = Engine(
        ledger,
        fake,
        CallableSink(_noop),
        owner="bench|1|x",
        config=EngineConfig(batch_size=batch, concurrency=concurrency),
    )
    jobs = [JobSpec(input=f"job number {i}", model="m") for i in range(n)]
    start = time.perf_counter()
    await engine.submit(jobs)
    clock.advance(5)
    report = await engine.tick()
    elapsed = time.perf_counter() - start
    counts = await ledger.counts()
    await ledger.close()
    assert report.counts["consumed"] == n, report.summary()
    assert counts == {"consumed": (n, counts["consumed"][1])}
    return n / elapsed, _max_rss_mib()


def run_baseline(n: int, workdir: Path) -> tuple[float, float]:
    seed = load_baseline()
    ids = iter(range(10**9))

    class StubInteractions:
        def create(self, **kw: object) -> SimpleNamespace:
            return SimpleNamespace(id=f"i{next(ids)}", status="in_progress")

        def get(self, handle: str) -> SimpleNamespace:
            return SimpleNamespace(id=handle, status="completed", model_dump_json=lambda: "{}")

    seed.client = SimpleNamespace(interactions=StubInteractions())
    jobs = [{"input": f"job number {i}"} for i in range(n)]
    delivered = []
    start = time.perf_counter()
    seed.tick(str(workdir / "seed.db"), jobs, lambda idem, op: delivered.append(idem))
    seed.tick(str(workdir / "seed.db"), [], lambda idem, op: delivered.append(idem))
    elapsed = time.perf_counter() - start
    assert len(delivered) == n
    return n / elapsed, _max_rss_mib()


def run_huey(n: int, workdir: Path) -> tuple[float, float]:
    from huey import SqliteHuey

    huey = SqliteHuey(filename=str(workdir / "huey.db"), fsync=True, results=True)

    @huey.task()
    def job(number: int) -> int:
        return number

    start = time.perf_counter()
    for i in range(n):
        job(i)
    done = 0
    while (task := huey.dequeue()) is not None:
        huey.execute(task)
        done += 1
    elapsed = time.perf_counter() - start
    assert done == n
    return n / elapsed, _max_rss_mib()


def _huey_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("huey") is not None


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(which: str, n: int, batch: int, db: str = "") -> None:
    """One measurement in a fresh process, so peak memory is this run's own."""
    with tempfile.TemporaryDirectory() as d:
        if which == "ours":
            rate, rss = asyncio.run(run_ours(n, Path(d), batch, db))
        elif which == "huey":
            rate, rss = run_huey(n, Path(d))
        else:
            rate, rss = run_baseline(n, Path(d))
    print(json.dumps({"rate": rate, "rss": rss}))


def _measure(which: str, n: int, batch: int, db: str = "") -> tuple[float, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            which,
            "--jobs",
            str(n),
            "--batch",
            str(batch),
            "--db",
            db,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    data = json.loads(out.strip().splitlines()[-1])
    return data["rate"], data["rss"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--pg", default=None, help="also on PostgreSQL: auto or a server's URL")
    ap.add_argument("--huey", action="store_true", help="add huey's SqliteHuey as an anchor")
    ap.add_argument("--child", choices=["ours", "baseline", "huey"], help=argparse.SUPPRESS)
    ap.add_argument("--db", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child, a.jobs, a.batch, a.db)
        return
    from postgres import PgDatabases

    pg = PgDatabases(a.pg) if a.pg else None
    huey = a.huey and _huey_installed()
    if a.huey and not huey:
        print("huey is not installed (pip install huey): its anchor is left out")
    ours, base, on_pg, anchor = [], [], [], []
    load = [os.getloadavg()[0]]
    try:
        for _ in range(a.runs):
            ours.append(_measure("ours", a.jobs, a.batch))
            if pg is not None:
                url = pg.create()
                try:
                    on_pg.append(_measure("ours", a.jobs, a.batch, url))
                finally:
                    pg.drop(url)
            if not a.skip_baseline:
                base.append(_measure("baseline", a.jobs, a.batch))
            if huey:
                anchor.append(_measure("huey", a.jobs, a.batch))
            load.append(os.getloadavg()[0])
    finally:
        if pg is not None:
            pg.close()
    rows = [["reclaim-tui", a.jobs, median([o[0] for o in ours]), median([o[1] for o in ours])]]
    if on_pg:
        rows.append(
            [
                "reclaim-tui on PostgreSQL",
                a.jobs,
                median([o[0] for o in on_pg]),
                median([o[1] for o in on_pg]),
            ]
        )
    if base:
        rows.append(
            ["baseline (seed)", a.jobs, median([b[0] for b in base]), median([b[1] for b in base])]
        )
    if anchor:
        rows.append(
            ["huey SqliteHuey (fsync)", a.jobs, median([h[0] for h in anchor]),
             median([h[1] for h in anchor])]
        )  # fmt: skip
    print(
        f"Ledger alone, SQLite synchronous=FULL / PostgreSQL synchronous_commit=on, {a.runs}"
        f" runs each in a fresh process, medians; load {min(load):.1f}–{max(load):.1f}"
    )
    print(table(["design", "jobs", "jobs/s", "peak RSS MiB"], rows))
    if base:
        baseline = median([b[0] for b in base])
        print(f"ratio (reclaim-tui / baseline): {rows[0][2] / baseline:.2f}x")
    if on_pg:
        print(f"ratio (PostgreSQL / SQLite): {rows[1][2] / rows[0][2]:.2f}x")
    if anchor:
        print(f"ratio (reclaim-tui / huey): {rows[0][2] / rows[-1][2]:.2f}x")


if __name__ == "__main__":
    main()
