"""Alternating pairs: N processes on one SQLite ledger, this tree against another.

Each run is benchmarks/_processes.py's (the processes submit their shares and
tick until every job is consumed) in fresh processes; "before" runs the
other tree's `src` (put first on PYTHONPATH, so its reclaim_tui is the one
imported), "after" this one's. Pairs alternate which goes first. The medium
is TMPDIR's (a tmpfs with TMPDIR=/dev/shm, the disk with TMPDIR=/tmp).

    git worktree add /tmp/before <rev>
    TMPDIR=/dev/shm python benchmarks/investigations/process_pairs.py \\
        --before /tmp/before/src --pairs 5 --processes 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]

_ONE = """
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from _processes import run_processes
with tempfile.TemporaryDirectory() as d:
    print(json.dumps(run_processes(int(sys.argv[2]), int(sys.argv[3]), 2000, Path(d))))
"""


def _run(src: str, jobs: int, processes: int) -> float:
    env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", _ONE, str(BENCH), str(jobs), str(processes)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rate: float = json.loads(out.strip().splitlines()[-1])[0]
    return rate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the other tree's src directory")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=20_000)
    a = ap.parse_args()
    ratios, got = [], {"before": [], "after": []}
    for n in range(a.pairs):
        order = ("before", "after") if n % 2 == 0 else ("after", "before")
        rates = {}
        for which in order:
            load = os.getloadavg()[0]
            rates[which] = _run(a.before if which == "before" else "", a.jobs, a.processes)
            got[which].append(rates[which])
            print(f"pair {n + 1} {which}: {rates[which]:,.0f} jobs/s (load {load:.2f})", flush=True)
        ratios.append(rates["after"] / rates["before"])
    print(
        f"{a.processes} processes, {a.jobs} jobs, TMPDIR={os.environ.get('TMPDIR', '')}:"
        f" before median {statistics.median(got['before']):,.0f},"
        f" after median {statistics.median(got['after']):,.0f} jobs/s;"
        f" after / before {', '.join(f'{r:.2f}' for r in ratios)}"
        f" (median {statistics.median(ratios):.2f}x)"
    )


if __name__ == "__main__":
    main()
