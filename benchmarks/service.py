"""Benchmark 7: throughput of the service mode (`reclaim-tui run`), warm (issue 14).

The 20x target is for a warm process: `reclaim-tui run` is started on an empty
ledger and waits (its `ready` line, then one idle pass); the N jobs then
*arrive* — reserved in the ledger by another process, as `reclaim-tui submit
--no-send` or a producer would do — and the clock runs from their commit until
the ledger shows every one consumed. Beside it, in the same run against the
same emulator process (latency 0, reset between runs):

  service + submit  the same service, the jobs arriving by `reclaim-tui submit
              --no-send FILE` (a fresh process that validates and inserts; no
              SDK): the clock starts before it, its CPU counts with the service's
  tick loop   reclaim-tui ticking in one process from a cold start (the
              throughput benchmark's default), its whole run
  baseline    the seed design, --ticks 2 --interval 0, its whole run
  DBOS        the same job as DBOS durable workflows on a SQLite system
              database (benchmarks/_dbos_worker.py), its whole run; only
              where a Python with dbos exists (--dbos-python, default
              ./.venv-dbos/bin/python: `python -m venv .venv-dbos &&
              .venv-dbos/bin/pip install "dbos>=3.4,<4" "google-genai>=3.3,<4"`)

    python benchmarks/service.py [--jobs 1000] [--runs 3] [--first-poll 0]
        [--transports aiohttp,httpx] [--service-only] [--loop asyncio|uvloop]

`--transports`: the warm service once per HTTP transport (`run --transport`; the
first row, "service (warm)", is the default transport, aiohttp; the others are
named by theirs);
`--service-only`: the warm service rows alone (no submit, tick loop, baseline, DBOS);
`--loop`: the event loop of the service rows (`run --loop`; uvloop needs the
`fast` extra); the tick loop and the baseline keep asyncio's.

"of it kernel": the part of the warm service's own CPU a job that is the
kernel's (/proc's system time): on a disk, the result files' creation, the
fsyncs and the WAL's writes; on a tmpfs, little. Every run's folder is kept
until the benchmark ends (`_run_dir`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, median, table
from _emulator import (
    API_KEY,
    EmulatorProcess,
    baseline_cmd,
    consumed_count,
    ours_cmd,
    run_worker,
    write_jobs,
)

#: Every run's folder, kept until the benchmark ends (`_kept_runs`). A run's
#: 2 x N result files removed at once make the next minutes' file creations in
#: that part of the disk slow on an ext4 without a journal (the kernel skips
#: every recently freed inode, one by one, for each new file): removed after
#: each run, the next runs measured the benchmark's own cleanup (the sink's
#: thread, kernel CPU: 0.18 -> 0.81 -> 1.18 ms a job over three runs).
_RUN_DIRS: list[Path] = []


def _run_dir(prefix: str) -> Path:
    """A new folder for one run, removed when the benchmark ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    _RUN_DIRS.append(path)
    return path


@contextlib.contextmanager
def _kept_runs() -> Iterator[None]:
    """Runs' folders stay until every run is done, then all go."""
    try:
        yield
    finally:
        while _RUN_DIRS:
            shutil.rmtree(_RUN_DIRS.pop(), ignore_errors=True)


def _cpu_times(pid: int) -> tuple[float, float]:
    """User and system (kernel) CPU of a running process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process (Linux /proc), in seconds."""
    return sum(_cpu_times(pid))


def _env() -> dict[str, str]:
    return {**os.environ, "GEMINI_API_KEY": API_KEY, "PYTHONPATH": str(ROOT / "src")}


async def _reserve(db: Path, jobs: Path) -> None:
    from reclaim_tui.core.jobsfile import read_jobs_file
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.models import Actor

    specs = read_jobs_file(str(jobs), default_model="gemini-flash-latest")
    ledger = await open_ledger(db)
    try:
        rows = [(idempotency_key(j), j.to_json(), j.target) for j in specs]
        await ledger.insert_jobs(rows, Actor.CLI)
    finally:
        await ledger.close()


def _submit(db: Path, jobs: Path) -> float:
    """`reclaim-tui submit --no-send FILE`, a fresh process (what a producer beside a
    running service runs); returns its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "reclaim_tui", "submit", "--no-send", "--db", str(db), str(jobs)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"submit --no-send: exit {done.returncode}: {done.stderr[-500:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def service_run(
    emu: EmulatorProcess,
    a: argparse.Namespace,
    run: int,
    via_submit: bool = False,
    transport: str = "aiohttp",
) -> dict[str, float]:
    """`via_submit`: the jobs arrive by `submit --no-send` (its CPU counted with the
    service's), else reserved by this process (the service's CPU alone)."""
    emu.reset()
    work = _run_dir("bench-service-")
    jobs, db, out, log = work / "jobs.jsonl", work / "ledger.db", work / "out", work / "run.log"
    write_jobs(jobs, a.jobs, tag=f"svc-r{run}-")
    cmd = [sys.executable, "-m", "reclaim_tui", "run", "--db", str(db), "--out", str(out)]
    cmd += ["--base-url", emu.base_url, "--idle-sleep", "0.05", "--log", str(log)]
    cmd += ["--first-poll", str(a.first_poll), "--transport", transport, "--loop", a.loop]
    proc = subprocess.Popen(cmd, env=_env(), stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (log.exists() and "ready" in log.read_text()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not start: {proc.stderr.read()!r}")  # type: ignore[union-attr]
            time.sleep(0.02)
        ready = json.loads(log.read_text().splitlines()[0])
        assert ready.get("loop", "asyncio") == a.loop, ready  # the loop asked for
        time.sleep(0.5)  # warm: a few idle passes
        user_before, kernel_before = _cpu_times(proc.pid)
        start = time.perf_counter()
        submit_cpu = _submit(db, jobs) if via_submit else 0.0
        if not via_submit:
            asyncio.run(_reserve(db, jobs))
        while consumed_count(db) < a.jobs:
            if time.perf_counter() - start > 600:
                raise RuntimeError("the service did not consume every job")
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        # The warm service's own CPU, and submit's when it brought the jobs.
        user, kernel = _cpu_times(proc.pid)
        user, kernel = user - user_before, kernel - kernel_before
        cpu = user + kernel + submit_cpu
    finally:
        proc.terminate()
        proc.wait(30)
    stopped = [json.loads(line) for line in log.read_text().splitlines()][-1]
    assert stopped["event"] == "stopped", stopped
    # The kernel's share of the service's own CPU: on a disk, file creations,
    # fsyncs and the WAL's writes are most of it.
    return {
        "seconds": elapsed,
        "cpu_ms_per_job": 1000 * cpu / a.jobs,
        "kernel_ms_per_job": 1000 * kernel / a.jobs,
    }


def other_run(
    emu: EmulatorProcess, which: str, a: argparse.Namespace, run: int
) -> dict[str, float]:
    emu.reset()
    work = _run_dir(f"bench-{which}-")
    jobs, db, out = work / "jobs.jsonl", work / "ledger.db", work / "out"
    write_jobs(jobs, a.jobs, tag=f"{which}-r{run}-")
    if which == "tick loop":
        cmd = ours_cmd(
            emu.base_url, db, jobs, out, interval=0, concurrency=16, first_poll=a.first_poll
        )
    else:
        cmd = baseline_cmd(emu.base_url, db, jobs, out, ticks=2, interval=0)
    r = run_worker(cmd, db, a.jobs)
    return {"seconds": r.seconds, "cpu_ms_per_job": 1000 * r.cpu / a.jobs}


def dbos_python(path: str) -> str | None:
    """The Python that can import dbos, or None (the DBOS leg is skipped)."""
    if not Path(path).exists():
        return None
    probe = subprocess.run([path, "-c", "import dbos, google.genai"], capture_output=True)
    return path if probe.returncode == 0 else None


def dbos_run(
    emu: EmulatorProcess, python: str, a: argparse.Namespace, run: int
) -> dict[str, float]:
    emu.reset()
    work = _run_dir("bench-dbos-")
    jobs, db, out = work / "jobs.jsonl", work / "progress.db", work / "out"
    write_jobs(jobs, a.jobs, tag=f"dbos-r{run}-")
    cmd = [python, str(Path(__file__).resolve().parent / "_dbos_worker.py")]
    cmd += ["--base-url", emu.base_url, "--db", str(db), "--jobs", str(jobs)]
    cmd += ["--out", str(out), "--first-poll", str(a.first_poll)]
    r = run_worker(cmd, db, a.jobs)
    delivered = len(list(out.glob("*.md")))
    assert delivered == a.jobs, f"DBOS delivered {delivered} of {a.jobs}"
    return {"seconds": r.seconds, "cpu_ms_per_job": 1000 * r.cpu / a.jobs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--first-poll", type=float, default=0.0)
    ap.add_argument("--dbos-python", default=str(ROOT / ".venv-dbos" / "bin" / "python"))
    ap.add_argument("--transports", default="aiohttp")
    ap.add_argument("--service-only", action="store_true")
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    a = ap.parse_args()
    transports = [t for t in a.transports.split(",") if t]
    more = {f"service (warm, {t})": t for t in transports if t != "aiohttp"}
    print(f"service event loop: {a.loop} (run --loop {a.loop})", flush=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    dbos = None if a.service_only else dbos_python(a.dbos_python)
    designs: tuple[str, ...] = ("service (warm)", *more)
    if not a.service_only:
        designs += ("service + submit", "tick loop", "baseline")
    if dbos is not None:
        designs += ("DBOS",)
    elif not a.service_only:
        print(f"DBOS: skipped, no dbos importable by {a.dbos_python} (see the docstring)")
    results: dict[str, list[dict[str, float]]] = {d: [] for d in designs}
    with EmulatorProcess("--latency", "0") as emu, _kept_runs():
        for run in range(a.runs):
            results["service (warm)"].append(service_run(emu, a, run))
            for design, transport in more.items():
                results[design].append(service_run(emu, a, run, transport=transport))
            if a.service_only:
                print(f"run {run + 1}: {[results[d][-1] for d in designs]}", flush=True)
                continue
            results["service + submit"].append(service_run(emu, a, run, via_submit=True))
            for which in ("tick loop", "baseline"):
                results[which].append(other_run(emu, which, a, run))
            if dbos is not None:
                results["DBOS"].append(dbos_run(emu, dbos, a, run))
            print(
                f"run {run + 1}: " + ", ".join(f"{d} {results[d][-1]}" for d in designs), flush=True
            )
    rows = []
    rate = {}
    for d in designs:
        seconds = median([r["seconds"] for r in results[d]])
        rate[d] = a.jobs / seconds
        cpu = median([r["cpu_ms_per_job"] for r in results[d]])
        kernels = [r["kernel_ms_per_job"] for r in results[d] if "kernel_ms_per_job" in r]
        kernel = f"{median(kernels):.2f}" if kernels else "–"
        rows.append([d, a.jobs, f"{seconds:.2f}", f"{rate[d]:.0f}", f"{cpu:.2f}", kernel])
    print(f"\nEmulator latency 0, first poll {a.first_poll:g} s, {a.runs} runs each, medians")
    print(table(["design", "jobs", "seconds", "jobs/s", "CPU ms/job", "of it kernel"], rows))
    for design in more:
        cpu = {d: median([r["cpu_ms_per_job"] for r in results[d]]) for d in results}
        print(f"{design} / service (warm), CPU a job: {cpu[design] / cpu['service (warm)']:.2f}x")
    if a.service_only:
        print(f"load average after: {os.getloadavg()}")
        return
    print(f"service (warm) / baseline: {rate['service (warm)'] / rate['baseline']:.1f}x")
    print(f"service + submit / baseline: {rate['service + submit'] / rate['baseline']:.1f}x")
    print(f"tick loop / baseline: {rate['tick loop'] / rate['baseline']:.1f}x")
    if "DBOS" in rate:
        print(f"DBOS / baseline: {rate['DBOS'] / rate['baseline']:.1f}x")
        print(f"service (warm) / DBOS: {rate['service (warm)'] / rate['DBOS']:.1f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
