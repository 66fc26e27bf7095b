"""Benchmark 1: throughput, from an empty ledger to every job consumed.

N jobs against the emulator with no latency (an interaction is complete as soon as it
exists). Both designs run as their own process against the SAME emulator process
(reset between runs), on the same jobs file, and the clock runs from process start
until the worker's ledger shows every job consumed:

  reclaim-tui  one process: a tick that submits the file, then ticks until nothing is
               active (`--cli`: `reclaim-tui tick` processes instead);
  baseline     benchmarks/baseline/seed_ledger.py --ticks 2 --interval 0: its first tick
               submits all, the second reclaims all (its only way to see "done").

reclaim-tui polls a job first 2 s after its create (EngineConfig.first_poll), so a
small N pays that wait once; `--first-poll 0` shows the machinery without it.

    python benchmarks/throughput.py [--jobs 1000] [--runs 3] [--cli] [--first-poll S]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, table
from _emulator import EmulatorProcess, WorkerRun, baseline_cmd, ours_cmd, run_worker, write_jobs


def one_run(emu: EmulatorProcess, which: str, a: argparse.Namespace, run: int) -> WorkerRun:
    emu.reset()
    with tempfile.TemporaryDirectory(prefix=f"bench-{which}-") as d:
        work = Path(d)
        jobs, db, out = work / "jobs.jsonl", work / "ledger.db", work / "out"
        write_jobs(jobs, a.jobs, tag=f"r{run}-")
        if which == "ours":
            cmd = ours_cmd(
                emu.base_url,
                db,
                jobs,
                out,
                interval=0,
                concurrency=a.concurrency,
                first_poll=a.first_poll,
                cli=a.cli,
            )
        else:
            cmd = baseline_cmd(emu.base_url, db, jobs, out, ticks=2, interval=0)
        result = run_worker(cmd, db, a.jobs)
    creates = emu.stats()["calls"]["create"]
    if creates != a.jobs:
        raise RuntimeError(f"{which}: {creates} creates for {a.jobs} jobs")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16, help="reclaim-tui --concurrency")
    ap.add_argument(
        "--first-poll",
        type=float,
        default=None,
        help="Override reclaim-tui's first poll delay (default: the engine's 2 s).",
    )
    ap.add_argument("--cli", action="store_true", help="reclaim-tui as repeated CLI ticks.")
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    results: dict[str, list[WorkerRun]] = {"ours": [], "baseline": []}
    with EmulatorProcess("--latency", "0") as emu:
        for run in range(a.runs):
            for which in ("ours", "baseline"):
                if which == "baseline" and a.skip_baseline:
                    continue
                r = one_run(emu, which, a, run)
                results[which].append(r)
                print(
                    f"  run {run + 1} {which}: {r.seconds:.2f} s, {r.cpu:.2f} CPU s",
                    file=sys.stderr,
                )
    mode = "CLI ticks" if a.cli else "tick loop"
    fp = f", first poll {a.first_poll:g} s" if a.first_poll is not None else ""
    rows = []
    for which, label in (("ours", f"reclaim-tui ({mode}{fp})"), ("baseline", "baseline (seed)")):
        runs = results[which]
        if runs:
            seconds = median([r.seconds for r in runs])
            rows.append(
                [
                    label,
                    a.jobs,
                    seconds,
                    a.jobs / seconds,
                    median([r.cpu for r in runs]) * 1000 / a.jobs,
                ]
            )
    print(f"Throughput, emulator latency 0, {a.runs} runs each in a fresh process, medians")
    print(table(["design", "jobs", "seconds", "jobs/s", "worker CPU ms/job"], rows))
    if len(rows) == 2:
        print(f"ratio (reclaim-tui / baseline): {rows[0][3] / rows[1][3]:.1f}x")


if __name__ == "__main__":
    main()
