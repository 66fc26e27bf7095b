"""Where the event loop and SQLite's thread take turns in the ledger-alone run.

ledger_only.py's run of N jobs (fake backend, no-op sink, synchronous=FULL),
with: the event loop's time blocked in its selector (nothing to run, or the
interpreter's lock still held by SQLite's thread when the wait ends), each
thread's CPU (time.thread_time, read in the thread), each call handed to
SQLite's thread timed inside it, and the part of those calls during which the
loop was out of its selector (both threads at work at once; 0 when they take
turns), and the time from a call's hand-off to its start in the thread. Split
by pass: the send pass (inside the submit), the reclaim pass, and the
submit's reserve (its wall and loop CPU are not split out). `--switch MS`:
sys.setswitchinterval first (the interpreter's default is 5 ms).

    TMPDIR=/dev/shm PYTHONPATH=src python benchmarks/investigations/overlap_turns.py \
        [--jobs 20000] [--switch MS]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import selectors
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
import aiosqlite
from ledger_only import run_ours

from reclaim_tui.core.engine import reclaiming, sending

#: modules between a ledger method and aiosqlite's hand-off, skipped to name the caller
_PLUMBING = ("aiosqlite_private.py", "hot_writes.py", "core.py", "cursor.py", "context.py")
PHASE = ["setup"]
SELECT = collections.Counter[str]()
THREAD = collections.Counter[str]()
CALLS = collections.Counter[str]()
CPU: dict[str, float] = {}
#: (start, end) of each select the loop waited in, of each call SQLite's thread ran
WAITS: list[tuple[float, float]] = []
BUSY: list[tuple[float, float]] = []


def overlapped() -> float:
    """Seconds SQLite's thread ran a call while the loop was not waiting in
    its selector (both threads at work at once)."""
    waits = sorted(WAITS)
    total = 0.0
    i = 0
    for start, end in sorted(BUSY):
        covered = 0.0
        while i < len(waits) and waits[i][1] <= start:
            i += 1
        j = i
        while j < len(waits) and waits[j][0] < end:
            covered += min(end, waits[j][1]) - max(start, waits[j][0])
            j += 1
        total += (end - start) - covered
    return total


def patch() -> None:
    real_select = selectors.EpollSelector.select

    def select(self: Any, timeout: float | None = None) -> Any:
        t = time.perf_counter()
        try:
            return real_select(self, timeout)
        finally:
            e = time.perf_counter()
            SELECT[PHASE[0]] += e - t
            WAITS.append((t, e))

    selectors.EpollSelector.select = select  # type: ignore[method-assign]

    real_execute = aiosqlite.Connection._execute

    async def execute(self: Any, fn: Any, *args: Any, **kw: Any) -> Any:
        caller = sys._getframe(1)
        while (
            caller.f_code.co_filename.endswith(
                ("aiosqlite_private.py", "hot_writes.py", "core.py", "cursor.py", "context.py")
            )
            and caller.f_back
        ):
            caller = caller.f_back
        name = f"{PHASE[0]}:{caller.f_code.co_name}"
        phase = PHASE[0]
        CALLS[name] += 1

        handed = time.perf_counter()

        def timed(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            w = time.perf_counter()
            THREAD["~handed"] += w - handed
            try:
                return fn(*a, **k)
            finally:
                BUSY.append((w, time.perf_counter()))
                THREAD[name] += time.thread_time() - t
                THREAD["@" + phase] += time.thread_time() - t

        return await real_execute(self, timed, *args, **kw)

    aiosqlite.Connection._execute = execute  # type: ignore[method-assign]

    for module, attr, phase in (
        (sending, "send_reserved", "send"),
        (reclaiming, "reclaim", "reclaim"),
    ):
        real = getattr(module, attr)

        def wrap(real: Any = real, phase: str = phase) -> Any:
            async def wrapped(*a: Any, **k: Any) -> Any:
                before = PHASE[0]
                PHASE[0] = phase
                t, c = time.perf_counter(), time.thread_time()
                try:
                    return await real(*a, **k)
                finally:
                    CPU["wall:" + phase] = CPU.get("wall:" + phase, 0) + time.perf_counter() - t
                    CPU["loop:" + phase] = CPU.get("loop:" + phase, 0) + time.thread_time() - c
                    PHASE[0] = before

            return wrapped

        setattr(module, attr, wrap())
    # the engine imported the modules, not the names: patched in place above


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--switch", type=float, default=0.0, help="sys.setswitchinterval, ms")
    args = parser.parse_args()
    if args.switch:
        sys.setswitchinterval(args.switch / 1000)
    n = args.jobs
    patch()
    marks: dict[str, float] = {}

    async def prepare(_l: Any) -> None:
        PHASE[0] = "submit"
        for kept in (SELECT, THREAD, CALLS, WAITS, BUSY):
            kept.clear()
        marks["wall"], marks["loop"] = time.perf_counter(), time.thread_time()

    async def finish(_l: Any) -> None:
        marks["wall"] = time.perf_counter() - marks["wall"]
        marks["loop"] = time.thread_time() - marks["loop"]
        PHASE[0] = "end"

    with tempfile.TemporaryDirectory() as d:
        rate, _ = asyncio.run(run_ours(n, Path(d), 2000, prepare=prepare, finish=finish))
    ms = 1000 / n
    thread_total = sum(v for k, v in THREAD.items() if not k.startswith(("@", "~")))
    print(
        f"jobs/s {rate:.0f}; wall {marks['wall'] * ms:.4f} ms/job;"
        f" loop CPU {marks['loop'] * ms:.4f}; loop in select {sum(SELECT.values()) * ms:.4f};"
        f" SQLite thread in calls {thread_total * ms:.4f}"
    )
    busy = sum(e - s for s, e in BUSY)
    print(
        f"SQLite thread in calls (wall) {busy * ms:.4f} ms/job;"
        f" of it with the loop at work too {overlapped() * ms:.4f};"
        f" from hand-off to the call's start {THREAD['~handed'] * ms:.4f}"
    )
    for phase in ("submit", "send", "reclaim"):
        wall = CPU.get("wall:" + phase)
        loop = CPU.get("loop:" + phase)
        print(
            f"  {phase:8s} wall {(wall or 0) * ms:.4f} loop {(loop or 0) * ms:.4f}"
            f" select {SELECT[phase] * ms:.4f} thread {THREAD['@' + phase] * ms:.4f}"
        )
    for name, count in sorted(CALLS.items(), key=lambda kv: -THREAD[kv[0]])[:4]:
        print(f"    {name:45s} calls {count:6d} thread {THREAD[name] * ms:.4f} ms/job")


if __name__ == "__main__":
    main()
