"""Variants of N processes on one SQLite ledger, run in turn, round after round.

Each run is benchmarks/_processes.py's (the processes submit their shares and
tick until every job is consumed), in fresh processes, on a fresh ledger in
TMPDIR (a tmpfs with TMPDIR=/dev/shm). A variant is a JSON object:

    src    another tree's `src`, put first on PYTHONPATH (default: this one's)
    bench  the folder its _processes.py is taken from (default: this one's)
    env    variables set for its run (a tree patched to read them)
    sql    a script run on the new ledger before the processes start
           (dropping an index or a trigger, say)

The first variant is the reference: each variant's median is given as a
ratio to it. Rounds alternate the order of the variants.

    TMPDIR=/dev/shm python benchmarks/investigations/sqlite_variants.py \\
        VARIANTS.json --processes 2 --rounds 4

with VARIANTS.json, for instance:

    {"main": {},
     "two indexes fewer": {"sql": "DROP INDEX jobs_updated; DROP INDEX jobs_status_age;"},
     "calls in flight 128": {"src": "/tmp/c/src", "bench": "/tmp/c/benchmarks",
                             "env": {"CONC": "128"}}}

benchmarks/investigations/sqlite_two_writers.md says what was measured with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_ONE = """
import asyncio, json, sqlite3, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from _processes import run_processes
from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.ledger.opening import open_ledger
with tempfile.TemporaryDirectory() as d:
    db = str(Path(d) / "ours.db")
    async def make():
        await (await open_ledger(db, clock=SystemClock())).close()
    asyncio.run(make())
    if sys.argv[4]:
        c = sqlite3.connect(db)
        c.executescript(sys.argv[4])
        c.commit()
        c.close()
    print(json.dumps(run_processes(int(sys.argv[2]), int(sys.argv[3]), 2000, Path(d))))
"""


def run_variant(variant: dict[str, Any], jobs: int, processes: int) -> float:
    """One run of `processes` processes on a fresh ledger: its jobs/s."""
    env = dict(os.environ, PYTHONPATH=variant.get("src") or str(ROOT / "src"))
    env.update(variant.get("env", {}))
    bench = variant.get("bench") or str(ROOT / "benchmarks")
    out = subprocess.run(
        [sys.executable, "-c", _ONE, bench, str(jobs), str(processes), variant.get("sql", "")],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rate: float = json.loads(out.strip().splitlines()[-1])[0]
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", help="a JSON file: {name: variant}")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=20_000)
    a = ap.parse_args()
    variants: dict[str, dict[str, Any]] = json.loads(Path(a.variants).read_text())
    got: dict[str, list[float]] = {name: [] for name in variants}
    for n in range(a.rounds):
        order = list(variants) if n % 2 == 0 else list(reversed(variants))
        load = os.getloadavg()[0]
        for name in order:
            got[name].append(run_variant(variants[name], a.jobs, a.processes))
        shown = ", ".join(f"{name} {got[name][-1]:,.0f}" for name in variants)
        print(f"round {n + 1} (load {load:.2f}): {shown}", flush=True)
    first = statistics.median(got[next(iter(variants))])
    print(f"{a.processes} processes, {a.jobs} jobs, TMPDIR={os.environ.get('TMPDIR', '')}:")
    for name, rates in got.items():
        median = statistics.median(rates)
        print(f"  {name}: median {median:,.0f} jobs/s, {median / first:.3f}x")


if __name__ == "__main__":
    main()
