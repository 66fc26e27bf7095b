"""Helpers for the benchmarks that talk HTTP: the emulator as its own process, job
files, and one worker run (reclaim-tui or the baseline) timed until every job of a
ledger is consumed.

The emulator runs in a separate process (`reclaim-tui emulator`), started once per
benchmark and reset between runs, so both designs meet the same server and only the
worker's CPU is counted (resource.RUSAGE_CHILDREN of the worker process alone).
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from _common import ROOT, baseline_path, free_port

from reclaim_tui.emulator.admin import AdminClient

__all__ = [
    "EmulatorProcess",
    "WorkerRun",
    "baseline_cmd",
    "consumed_count",
    "ours_cmd",
    "run_worker",
    "write_jobs",
]

API_KEY = "emulator-key"


class EmulatorProcess:
    """`reclaim-tui emulator FLAGS` on a free loopback port, for the `with` block."""

    def __init__(self, *flags: str) -> None:
        self.flags = flags
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.admin = AdminClient(self.base_url, timeout=30.0)
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> EmulatorProcess:
        cmd = [
            sys.executable,
            "-m",
            "reclaim_tui",
            "emulator",
            "--port",
            str(self.port),
            "--api-key",
            API_KEY,
            *self.flags,
        ]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.stats()
                return self
            except OSError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the emulator did not start: {' '.join(cmd)}") from None
                time.sleep(0.1)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self.admin.stats()
        return result

    def reset(self) -> None:
        self.admin.reset()

    def set_faults(self, faults: dict[str, Any]) -> None:
        self.admin.set_faults(faults)


def write_jobs(path: Path, n: int, tag: str = "") -> None:
    """N distinct jobs as JSON Lines (the format both designs read)."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(
                json.dumps(
                    {
                        "input": f"Summarise report {tag}#{i} in one line.",
                        "model": "gemini-flash-latest",
                    }
                )
                + "\n"
            )


def consumed_count(db: Path) -> int:
    """Rows of a ledger (either design: both have `jobs.status`) that are consumed."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return int(
                conn.execute("SELECT COUNT(*) FROM jobs WHERE status = 'consumed'").fetchone()[0]
            )
    except sqlite3.Error:  # not created yet, or mid-migration
        return 0


@dataclass
class WorkerRun:
    seconds: float  # wall time from process start until every job was consumed
    cpu: float  # user + system CPU seconds of the worker process
    consumed: int


def ours_cmd(
    base_url: str,
    db: Path,
    jobs: Path,
    out: Path,
    *,
    interval: float,
    concurrency: int,
    first_poll: float | None = None,
    cli: bool = False,
    webhook_url: str | None = None,
) -> list[str]:
    """reclaim-tui ticking until all is consumed: one process looping (what the console's
    worker does), or with `cli` a `reclaim-tui tick` process per tick (cron style)."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve().parent / "_tick_loop.py"),
        "--base-url",
        base_url,
        "--db",
        str(db),
        "--jobs",
        str(jobs),
        "--out",
        str(out),
        "--interval",
        str(interval),
        "--concurrency",
        str(concurrency),
    ]
    if first_poll is not None:
        cmd += ["--first-poll", str(first_poll)]
    if webhook_url is not None:
        cmd += ["--webhook-url", webhook_url]
    if cli:
        cmd.append("--cli")
    return cmd


def baseline_cmd(
    base_url: str, db: Path, jobs: Path, out: Path, *, ticks: int, interval: float
) -> list[str]:
    return [
        sys.executable,
        str(baseline_path()),
        "--base-url",
        base_url,
        "--db",
        str(db),
        "--jobs",
        str(jobs),
        "--out",
        str(out),
        "--ticks",
        str(ticks),
        "--interval",
        str(interval),
    ]


def _env() -> dict[str, str]:
    env = dict(os.environ, GEMINI_API_KEY=API_KEY)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    return env


def run_worker(
    cmd: list[str], db: Path, n: int, *, timeout: float = 3600, poll: float = 0.05
) -> WorkerRun:
    """Start `cmd`, stop it as soon as `db` shows n consumed rows (or it exits).

    The baseline only learns a job is done on a later tick and then sleeps out its
    remaining ticks, so the clock stops when the ledger says so, not at exit.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    consumed = 0
    while True:
        consumed = consumed_count(db)
        if consumed >= n or proc.poll() is not None:
            break
        if time.perf_counter() - start > timeout:
            break
        time.sleep(poll)
    elapsed = time.perf_counter() - start
    if proc.poll() is None:
        proc.terminate()
    _, err = proc.communicate(timeout=60)
    consumed = max(consumed, consumed_count(db))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if consumed < n:
        tail = err.decode(errors="replace")[-2000:]
        raise RuntimeError(f"{cmd[1]}: only {consumed}/{n} consumed\n{tail}")
    return WorkerRun(elapsed, cpu, consumed)
