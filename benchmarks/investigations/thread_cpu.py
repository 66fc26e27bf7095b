"""The ledger-alone run's CPU split by thread: the event loop's (main) and
the others' (aiosqlite's connection thread on SQLite).

ledger_only.py's run of N jobs through every state (the fake backend, a
no-op sink, `synchronous=FULL`), timed from after the ledger is set up to
before it closes; each thread's utime + stime read from /proc/self/task.
Prints one JSON line: jobs/s and CPU ms a job of the main thread and of the
others. Run it from the checkout to measure (its venv's reclaim_tui):

    TMPDIR=/tmp python benchmarks/investigations/thread_cpu.py [--jobs 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from ledger_only import run_ours

TICK = os.sysconf("SC_CLK_TCK")


def threads_cpu() -> dict[int, float]:
    """Thread id -> its CPU seconds so far (user + system)."""
    out: dict[int, float] = {}
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20000)
    args = parser.parse_args()
    n = args.jobs
    before: dict[int, float] = {}
    after: dict[int, float] = {}

    async def prepare(_ledger: Any) -> None:
        before.update(threads_cpu())

    async def finish(_ledger: Any) -> None:
        after.update(threads_cpu())

    with tempfile.TemporaryDirectory() as d:
        rate, _ = asyncio.run(run_ours(n, Path(d), 2000, prepare=prepare, finish=finish))
    main_tid = os.getpid()
    main_s = after.get(main_tid, 0.0) - before.get(main_tid, 0.0)
    other_s = sum(v - before.get(t, 0.0) for t, v in after.items() if t != main_tid)
    print(
        json.dumps(
            {
                "jobs_per_s": round(rate),
                "main_ms_per_job": round(1000 * main_s / n, 4),
                "other_ms_per_job": round(1000 * other_s / n, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
