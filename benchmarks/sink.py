"""Benchmark 9: the directory sink, one delivery at a time vs a pass's batch (issue 14).

The default sink writes `<key>.md` and `<key>.json` durably. Before issue 14
each delivery cost three fsyncs (two files and the directory); now a pass
hands the sink its whole batch: temp files written, one syncfs(2), renames,
one directory fsync. Side by side, on the same disk, in one run:

  one at a time     DirectorySink.deliver per job (a custom caller's path)
  batch             DirectorySink.deliver_many, --batch jobs per call (the engine's path)
  batch, no syncfs  the same with syncfs unavailable (fsync per file, as on
                    systems without it)

    python benchmarks/sink.py [--jobs 1000] [--batch 100] [--runs 3]

Prints deliveries/s and CPU ms per delivery (medians), and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median, table

from reclaim_tui.core import sinks
from reclaim_tui.core.models import StoredResult
from reclaim_tui.core.sinks import DirectorySink


def _results(n: int) -> list[tuple[str, StoredResult]]:
    raw = {"id": "emu-1", "status": "completed", "outputs": [{"type": "text", "text": "x" * 800}]}
    return [
        (
            f"job{i:06d}",
            StoredResult(f"job{i:06d}", f"emu-{i}", "y" * 800, None, json.dumps(raw), 0.0),
        )
        for i in range(n)
    ]


async def _one_at_a_time(
    sink: DirectorySink, items: list[tuple[str, StoredResult]], _: int
) -> None:
    for idem, result in items:
        await sink.deliver(idem, result)


async def _batched(sink: DirectorySink, items: list[tuple[str, StoredResult]], batch: int) -> None:
    for start in range(0, len(items), batch):
        outcomes = await sink.deliver_many(items[start : start + batch])
        assert all(o is None for o in outcomes), outcomes


def _measure(
    run: Callable[[DirectorySink, list[tuple[str, StoredResult]], int], object],
    n: int,
    batch: int,
) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="bench-sink-", dir=os.environ.get("BENCH_DIR")) as d:
        sink = DirectorySink(Path(d))
        items = _results(n)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        asyncio.run(run(sink, items, batch))  # type: ignore[arg-type]
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        assert len(list(Path(d).glob("*.md"))) == n
    return n / wall, 1000 * cpu / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    syncfs = sinks._libc_syncfs
    legs: dict[str, list[tuple[float, float]]] = {
        "one at a time": [],
        "batch": [],
        "batch, no syncfs": [],
    }
    for _ in range(a.runs):
        legs["one at a time"].append(_measure(_one_at_a_time, a.jobs, a.batch))
        legs["batch"].append(_measure(_batched, a.jobs, a.batch))
        sinks._libc_syncfs = lambda: None  # type: ignore[assignment]
        try:
            legs["batch, no syncfs"].append(_measure(_batched, a.jobs, a.batch))
        finally:
            sinks._libc_syncfs = syncfs
    rows = []
    base = median([r for r, _ in legs["one at a time"]])
    for name, runs in legs.items():
        rate = median([r for r, _ in runs])
        cpu = median([c for _, c in runs])
        rows.append([name, a.jobs, f"{rate:,.0f}", f"{cpu:.3f}", f"{rate / base:.1f}x"])
    print(f"\n{a.jobs} deliveries, batches of {a.batch}, {a.runs} runs each, medians")
    print(table(["sink path", "jobs", "deliveries/s", "CPU ms/delivery", "vs one at a time"], rows))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
