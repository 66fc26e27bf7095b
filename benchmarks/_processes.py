"""The ledger alone in several processes at once, on one SQLite file.

What two services (or a service and a tick) on one ledger do: each process
submits its share of the jobs, then ticks until the ledger holds every job
`consumed`; each pass claims whatever is due, its own rows or the others'.
The processes take turns to write (core/ledger/sqlite/turn.py); one
prepares its next batch while the other writes.

Unlike ledger_only.py's single-process run (a manual clock moved past the
first poll), the clock here is the system's, shared by the processes, and
the first poll is due at once (`first_poll=0`); a run of one process goes
through this same harness so that the comparison is like for like. The fake
API of each process answers for the others' interactions too (an id it never
made is one that is done): in memory, the processes share no API, and a
real one answers whoever asks. Interaction ids are made distinct by a
prefix a process.

    python benchmarks/_processes.py DB PART PARTS JOBS BATCH   (one child)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend, _Remote
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink

__all__ = ["run_processes"]


class _SharedFake(FakeBackend):
    """A fake API that answers for interactions another process made."""

    def _lookup(self, handle: str) -> _Remote:
        remote = self.remotes.get(handle)
        if remote is None:
            remote = _Remote(id=handle, idem="", spec=JobSpec(input=handle, model="m"))
            self.remotes[handle] = remote
        return remote


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def _child(db: str, part: int, parts: int, n: int, batch: int) -> dict[str, Any]:
    clock = SystemClock()
    ledger = await open_ledger(db, clock=clock)
    fake = _SharedFake(clock=clock, latency=0.0)
    fake._ids = itertools.count(part * 100_000_000 + 1)
    engine = Engine(
        ledger,
        fake,
        CallableSink(_noop),
        owner=f"bench|{part + 1}|x",
        config=EngineConfig(batch_size=batch, concurrency=64, first_poll=0.0),
    )
    jobs = [JobSpec(input=f"job number {i}", model="m") for i in range(part, n, parts)]
    print("ready", flush=True)
    sys.stdin.readline()
    start, cpu = time.perf_counter(), time.process_time()
    await engine.submit(jobs)
    ticks = 0
    while True:
        await engine.tick()
        ticks += 1
        consumed = (await ledger.counts()).get("consumed", (0, 0))[0]
        if consumed >= n:
            break
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    turn = getattr(ledger, "_turn", None)
    await ledger.close()
    return {"start": start, "end": end, "cpu": cpu, "ticks": ticks,
            "waits": getattr(turn, "waits", 0)}  # fmt: skip


def run_processes(n: int, parts: int, batch: int, workdir: Path) -> tuple[float, float, float]:
    """`parts` processes on one fresh ledger in `workdir`: (jobs/s from the
    first process's start to the last one's end, CPU ms a job of them all,
    turns a job that had to wait)."""
    db = str(workdir / "ours.db")

    async def make() -> None:
        await (await open_ledger(db, clock=SystemClock())).close()

    asyncio.run(make())
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, db, str(part), str(parts), str(n), str(batch)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for part in range(parts)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError("a benchmark process failed to open the ledger")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outs = []
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            if proc.returncode:
                raise RuntimeError(f"a benchmark process exited with {proc.returncode}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    wall = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    cpu = sum(o["cpu"] for o in outs)
    return n / wall, cpu * 1000 / n, sum(o["waits"] for o in outs) / n


if __name__ == "__main__":
    db_, part_, parts_, n_, batch_ = sys.argv[1:6]
    got = asyncio.run(_child(db_, int(part_), int(parts_), int(n_), int(batch_)))
    print(json.dumps(got))
