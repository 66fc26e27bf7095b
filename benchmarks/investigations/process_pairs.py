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
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sqlite_variants import run_variant


def _run(src: str, jobs: int, processes: int) -> float:
    """One run, `src` first on PYTHONPATH ("": this tree's)."""
    return run_variant({"src": src}, jobs, processes)


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
