"""Lanes against calls in flight on PostgreSQL: the ledger-alone run of N
jobs (ledger_only.py's: the fake backend, a no-op sink) with each of the
given (lanes, calls in flight) pairs, in turn, every round, one throwaway
server for all (a fresh database a run), all in this one process.

`--lanes 2` shares `--concurrency` out over the lanes, so each lane claims
half as many rows a batch and writes twice as often; this tells apart what
the second lane gives from what the smaller batches cost (2x128 is two
lanes of 64, against one lane of 128). Prints each pair's jobs/s per round,
its median and the server's CPU ms a job (median).

    TMPDIR=/dev/shm python benchmarks/investigations/lanes_concurrency.py \\
        [--jobs 10000] [--runs 4] [--pairs 1x64,1x128,2x64,2x128]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))  # tests.helpers.postgres (the throwaway server)
from ledger_only import run_ours  # noqa: E402
from postgres import PgDatabases  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--pairs", default="1x64,1x128,2x64,2x128", help="LANESxCONCURRENCY,…")
    a = ap.parse_args()
    pairs = [(int(p.split("x")[0]), int(p.split("x")[1])) for p in a.pairs.split(",")]
    rates: dict[tuple[int, int], list[float]] = {p: [] for p in pairs}
    server: dict[tuple[int, int], list[float]] = {p: [] for p in pairs}
    pg = PgDatabases("auto")
    try:
        for _ in range(a.runs):
            for lanes, concurrency in pairs:
                url = pg.create()
                before = pg.cpu_seconds()
                with tempfile.TemporaryDirectory() as d:
                    run = run_ours(a.jobs, Path(d), 2000, url, concurrency=concurrency, lanes=lanes)
                    rate, _ = asyncio.run(run)
                server[lanes, concurrency].append((pg.cpu_seconds() - before) * 1000 / a.jobs)
                rates[lanes, concurrency].append(rate)
                pg.drop(url)
    finally:
        pg.close()
    for (lanes, concurrency), got in rates.items():
        each = ", ".join(f"{r:,.0f}" for r in got)
        cpu = statistics.median(server[lanes, concurrency])
        print(
            f"{lanes} lane(s), {concurrency} calls in flight: {each} jobs/s;"
            f" median {statistics.median(got):,.0f}; server CPU {cpu:.3f} ms a job"
        )


if __name__ == "__main__":
    main()
