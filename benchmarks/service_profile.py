"""Where the warm service's CPU goes per job (issue 27): py-spy over `reclaim-tui run`.

The service is started on an empty ledger against the emulator (latency 0) and
waits; py-spy then samples it (`--nonblocking`, CPU samples only, every thread)
while N jobs arrive and are consumed, as in `service.py`. Each sample is put in
one bucket by the libraries below reclaim-tui's outermost frame (the
command's own cli/ frames at the root aside):

  HTTP stack   httpx, httpcore, h11, anyio
  SDK models   google-genai and pydantic (building and dumping its models)
  sqlite       aiosqlite's thread (and sqlite3 called from it)
  sink         core/sinks.py and what it calls (temp files, fsync, renames)
  asyncio      the event loop itself (no reclaim-tui frame on the stack)
  ours         reclaim-tui's own Python and the stdlib it calls (json, …)

Sample counts are turned into CPU ms per 1,000 jobs with the service's CPU from
/proc over the same window (py-spy's sampling is not exact). A bucket names the
caller, not the leaf: a socket write made by httpcore through asyncio's transport
is HTTP; the SDK's parser calling the fast path's memo is the SDK's.

    python benchmarks/service_profile.py [--jobs 1000] [--rate 250] [--backend-env K=V]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _emulator import EmulatorProcess, consumed_count, write_jobs
from service import _cpu_seconds, _env, _reserve

PY_SPY = Path(sys.executable).with_name("py-spy")
BUCKETS = ("HTTP stack", "SDK models", "sqlite", "sink", "asyncio", "ours", "other")
_LIBS = (
    ("HTTP stack", ("httpx", "httpcore", "h11/", "anyio/", "aiohttp/", "multidict/", "yarl/")),
    ("SDK models", ("genai/", "pydantic")),
    ("sqlite", ("aiosqlite/", "sqlite3/")),
)


def _root_frame(frame: str) -> bool:
    # The CLI is a package (cli/__init__.py's main, cli/common.py's asyncio.run): its
    # frames are the root of every sample, never "ours" (they were, once cli.py split).
    return "reclaim_tui/cli" in frame or "reclaim_tui/__main__.py" in frame


def bucket(frames: list[str]) -> str:
    """The bucket of one sample; `frames` root first, each 'function (file:line)'."""
    # The command's own frames (cli/ → asyncio.run) are at the root of every sample.
    ours = [i for i, f in enumerate(frames) if "reclaim_tui/" in f and not _root_frame(f)]
    if any("reclaim_tui/core/sinks.py" in f for f in frames):
        return "sink"
    if any("aiosqlite/core.py" in f and f.startswith("run ") for f in frames):
        return "sqlite"
    below = frames[ours[0] + 1 :] if ours else frames
    for name, marks in _LIBS:  # in this order: the SDK's send wraps httpx
        if any(m in f for f in below for m in marks):
            return name
    if ours:
        return "ours"
    if any("asyncio/" in f for f in frames):
        return "asyncio"
    return "other"


def profile(a: argparse.Namespace) -> tuple[collections.Counter[str], float, float]:
    with EmulatorProcess("--latency", "0") as emu, tempfile.TemporaryDirectory() as d:
        work = Path(d)
        jobs, db, out, log = work / "jobs.jsonl", work / "ledger.db", work / "out", work / "log"
        write_jobs(jobs, a.jobs, tag="profile-")
        cmd = [sys.executable, "-m", "reclaim_tui", "run", "--db", str(db), "--out", str(out)]
        cmd += ["--base-url", emu.base_url, "--idle-sleep", "0.05", "--log", str(log)]
        cmd += ["--first-poll", "0"]
        env = _env()
        for pair in a.backend_env:
            key, _, value = pair.partition("=")
            env[key] = value
        proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE)
        raw = work / "raw.txt"
        try:
            while not (log.exists() and "ready" in log.read_text()):
                if proc.poll() is not None:
                    raise RuntimeError(f"the service did not start: {proc.stderr.read()!r}")  # type: ignore[union-attr]
                time.sleep(0.02)
            time.sleep(0.5)
            spy_cmd = [str(PY_SPY), "record", "-p", str(proc.pid), "-r", str(a.rate)]
            spy = subprocess.Popen(
                [*spy_cmd, "-f", "raw", "--nonblocking", "-o", str(raw)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # py-spy attached
            cpu_before = _cpu_seconds(proc.pid)
            start = time.perf_counter()
            asyncio.run(_reserve(db, jobs))
            while consumed_count(db) < a.jobs:
                if time.perf_counter() - start > 600:
                    raise RuntimeError("the service did not consume every job")
                time.sleep(0.01)
            seconds = time.perf_counter() - start
            cpu = _cpu_seconds(proc.pid) - cpu_before
            spy.send_signal(signal.SIGINT)
            spy.wait(60)
        finally:
            proc.terminate()
            proc.wait(30)
        if os.environ.get("RECLAIM_PROFILE_RAW"):
            Path(os.environ["RECLAIM_PROFILE_RAW"]).write_text(raw.read_text())
        counts: collections.Counter[str] = collections.Counter()
        for line in raw.read_text().splitlines():
            stack, _, n = line.rpartition(" ")
            if not stack or not n.isdigit():
                continue
            counts[bucket(stack.split(";"))] += int(n)
    return counts, cpu, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    ap.add_argument("--backend-env", action="append", default=[], metavar="K=V")
    a = ap.parse_args()
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    counts, cpu, seconds = profile(a)
    total = sum(counts.values()) or 1
    per_1000 = 1000 * cpu * 1000 / a.jobs
    print(f"{a.jobs} jobs in {seconds:.2f} s, service CPU {cpu:.2f} s ({per_1000:,.0f} ms / 1,000)")
    print("| bucket | samples | share | CPU ms per 1,000 jobs |")
    print("|---|---|---|---|")
    for name in BUCKETS:
        share = counts[name] / total
        print(f"| {name} | {counts[name]} | {100 * share:.0f} % | {share * per_1000:,.0f} |")
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
