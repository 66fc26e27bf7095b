"""Benchmark 6: the webhook inbox against polling only (issue 12).

One emulator process (jobs run 2–30 s, a seeded uniform draw per job, webhooks
delivered like the API's: dynamic, JWT-signed) and three workers over the same
jobs, one after the other, the emulator reset between them:

  polling   reclaim-tui ticking every 1 s in one process, no webhooks
  inbox     the same, with --webhook-url pointing at a `reclaim-tui inbox`
            process on the same ledger (events wake rows; polls are the fallback)
  baseline  the seed design (polls every 1 s)

For each: API calls per job (creates + gets, from the emulator's counters),
and the time from a job's completion at the emulator (its create time + its
drawn duration) to `done` in the ledger (reclaim-tui's `done_at`; the
baseline's last update) — p50 and p99 over the jobs — plus the wall time until
every job is consumed and the worker's CPU.

    python benchmarks/webhooks.py [--jobs 200] [--runs 3] [--seed 3]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, free_port, median, table
from _emulator import EmulatorProcess, baseline_cmd, ours_cmd, run_worker, write_jobs

LOW, HIGH = 2.0, 30.0
DESIGNS = ("polling", "inbox", "baseline")


def duration(seed: int, handle: str) -> float:
    """The job's run time as the emulator drew it (emulator/state.py `_duration`)."""
    seq = int(handle.rsplit("-", 1)[1])
    return random.Random(f"{seed}:{seq}").uniform(LOW, HIGH)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Inbox:
    """`reclaim-tui inbox` on the ledger, trusting the emulator's JWKS."""

    def __init__(self, db: Path, emulator_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/webhooks/gemini"
        jwks = f"{emulator_url}/.well-known/jwks.json"
        cmd = [sys.executable, "-m", "reclaim_tui", "inbox", "--db", str(db)]
        cmd += ["--listen", f"127.0.0.1:{self.port}", "--jwks-url", jwks]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 30
        while not self._up():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the inbox did not start")
            time.sleep(0.05)

    def _up(self) -> bool:
        try:
            urllib.request.urlopen(urllib.request.Request(self.url, b"{}", method="POST"))
        except urllib.error.HTTPError as exc:
            return exc.code == 401
        except OSError:
            return False
        return False

    def stop(self) -> str:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=20)
        return err.decode(errors="replace").strip().splitlines()[-1:][0] if err else ""


def _latencies(db: Path, emu: EmulatorProcess, seed: int, ours: bool) -> list[float]:
    ready = {c["id"]: c["at"] + duration(seed, c["id"]) for c in emu.admin.creates()}
    column = "done_at" if ours else "updated_at"
    with sqlite3.connect(db) as conn:
        rows = conn.execute(f"SELECT handle, {column} FROM jobs").fetchall()
    return [at - ready[handle] for handle, at in rows if handle in ready and at is not None]


def one_run(emu: EmulatorProcess, design: str, a: argparse.Namespace, run: int) -> dict[str, Any]:
    emu.reset()
    with tempfile.TemporaryDirectory(prefix=f"hooks-{design}-") as d:
        work = Path(d)
        jobs, db, out = work / "jobs.jsonl", work / "ledger.db", work / "out"
        write_jobs(jobs, a.jobs, tag=f"{design}-r{run}-")
        inbox = Inbox(db, emu.base_url) if design == "inbox" else None
        try:
            if design == "baseline":
                cmd = baseline_cmd(emu.base_url, db, jobs, out, ticks=100_000, interval=1)
            else:
                url = inbox.url if inbox is not None else None
                cmd = ours_cmd(
                    emu.base_url, db, jobs, out, interval=1, concurrency=16, webhook_url=url
                )
            r = run_worker(cmd, db, a.jobs)
        finally:
            said = inbox.stop() if inbox is not None else ""
        calls = emu.stats()["calls"]
        lat = _latencies(db, emu, a.seed, ours=design != "baseline")
    return {
        "seconds": r.seconds,
        "cpu_ms_per_job": 1000 * r.cpu / a.jobs,
        "calls_per_job": (calls["create"] + calls["get"]) / a.jobs,
        "p50": percentile(lat, 0.5),
        "p99": percentile(lat, 0.99),
        "inbox": said,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=3)
    a = ap.parse_args()
    flags = ("--latency", str(LOW), "--latency-max", str(HIGH), "--seed", str(a.seed))
    print(f"load average before: {os.getloadavg()}", flush=True)
    results: dict[str, list[dict[str, Any]]] = {d: [] for d in DESIGNS}
    with EmulatorProcess(*flags) as emu:
        for run in range(a.runs):
            for design in DESIGNS:
                results[design].append(one_run(emu, design, a, run))
                print(f"run {run + 1} {design}: {results[design][-1]}", flush=True)
    rows = []
    for design in DESIGNS:
        rs = results[design]
        rows.append(
            [
                design,
                a.jobs,
                f"{median([r['calls_per_job'] for r in rs]):.2f}",
                f"{median([r['p50'] for r in rs]):.2f}",
                f"{median([r['p99'] for r in rs]):.2f}",
                f"{median([r['seconds'] for r in rs]):.1f}",
                f"{median([r['cpu_ms_per_job'] for r in rs]):.1f}",
            ]
        )
    print(f"\nJobs of 2–30 s, {a.runs} runs each in fresh processes, medians")
    headers = [
        "design",
        "jobs",
        "API calls/job",
        "done p50 s",
        "done p99 s",
        "all consumed s",
        "worker CPU ms/job",
    ]
    print(table(headers, rows))
    calls = {d: median([r["calls_per_job"] for r in results[d]]) for d in DESIGNS}
    print(f"calls per job, inbox / polling: {calls['inbox'] / calls['polling']:.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
