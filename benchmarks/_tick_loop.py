"""reclaim-tui as a benchmark worker: the first tick submits the jobs file, later ticks
reclaim, until no row is active. Two shapes:

  (default) one process, `Engine.tick()` in a loop — what the console's worker does;
  --cli     `reclaim-tui tick` run again and again as separate processes — cron style.

--interval S sleeps S seconds between ticks; 0 sleeps until the ledger's next due row.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
import sqlite3
import subprocess
import sys
import time

ACTIVE = ("reserving", "submitted", "done")


def _active(db: str) -> int:
    with sqlite3.connect(db) as conn:
        marks = ",".join("?" for _ in ACTIVE)
        row = conn.execute(f"SELECT COUNT(*) FROM jobs WHERE status IN ({marks})", ACTIVE)
        return int(row.fetchone()[0])


def _next_wait(db: str, interval: float) -> float:
    if interval > 0:
        return interval
    with sqlite3.connect(db) as conn:
        due = conn.execute(
            "SELECT MIN(next_at) FROM jobs WHERE status IN ('reserving','submitted','done')"
        ).fetchone()[0]
    return max(0.0, min(5.0, (due or 0) - time.time()))


def run_cli(a: argparse.Namespace) -> None:
    base = [
        sys.executable,
        "-m",
        "reclaim_tui",
        "tick",
        "--base-url",
        a.base_url,
        "--db",
        a.db,
        "--out",
        a.out,
    ]
    if a.concurrency:
        base += ["--concurrency", str(a.concurrency)]
    # The harness stops this worker with SIGTERM once the ledger shows every job
    # consumed, usually while a tick child is still running: wait for that child
    # before exiting, so its CPU is counted (a child's own children count in
    # RUSAGE_CHILDREN only once waited for). It was not: --cli undercounted CPU
    # (issue 27: 2.4-3.6 ms/job against a real 4.5).
    stopping = False

    def stop(_sig: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    subprocess.run([*base, "--jobs", a.jobs], check=True, stdout=subprocess.DEVNULL)
    while not stopping and _active(a.db):
        time.sleep(_next_wait(a.db, a.interval))
        if not stopping:
            subprocess.run(base, check=True, stdout=subprocess.DEVNULL)


async def run_loop(a: argparse.Namespace) -> None:
    from reclaim_tui.bootstrap import open_engine
    from reclaim_tui.config import Settings
    from reclaim_tui.core.jobsfile import parse_jobs
    from reclaim_tui.core.models import Actor

    settings = Settings(
        db=a.db,
        base_url=a.base_url,
        out=a.out,
        concurrency=a.concurrency or None,
        webhook_url=a.webhook_url,
    ).validate()
    with open(a.jobs, encoding="utf-8") as f:
        jobs = parse_jobs(f.read().splitlines(), source=a.jobs, default_model=settings.model)
    async with open_engine(settings, actor=Actor.TICK) as engine:
        if a.first_poll is not None:
            engine.config = dataclasses.replace(engine.config, first_poll=a.first_poll)
        await engine.tick(jobs)
        while _active(a.db):
            await asyncio.sleep(_next_wait(a.db, a.interval))
            await engine.tick()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--interval", type=float, default=0.0)
    ap.add_argument("--concurrency", type=int, default=16, help="0: the adaptive default")
    ap.add_argument(
        "--first-poll",
        type=float,
        default=None,
        help="Override EngineConfig.first_poll (loop mode only).",
    )
    ap.add_argument("--webhook-url", default=None, help="Send creates with a webhook_config.")
    ap.add_argument("--cli", action="store_true")
    a = ap.parse_args()
    if a.cli:
        run_cli(a)
    else:
        asyncio.run(run_loop(a))


if __name__ == "__main__":
    main()
