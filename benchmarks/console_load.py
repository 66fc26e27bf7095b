"""The console on a big ledger while its reclaim loop works.

    python benchmarks/console_load.py [--rows 1000000] [--inflight 1000] [--presses 200]
                                      [--engine process|thread]

1. A ledger of `--rows` synthetic rows (bulk insert, one transaction; cached
   under /tmp and copied, since building a million rows takes a minute).
2. The emulator in its own process (`reclaim-tui emulator`, like a remote
   API: its CPU is not ours) and `--inflight` real jobs created on it through
   the engine and google-genai; they run 60–180 s, so the console's loop
   polls them during the whole measurement.
3. The console from `make_app` (the CLI's factory), headless, loop running
   every 2 s, its engine in a worker process as in production
   (`--engine thread` injects the same Gemini backend instead, which puts
   the engine in a thread of the console's process: the old layout, for a
   side-by-side figure). Measured: first paint (process-local start of the app → the
   table has rows), then key-press → refreshed latency over `--presses`
   keys: tab switches (→ a new window drawn), cursor moves (→ the detail
   of the new row shown), window paging and filters (→ a new window drawn).

Targets: first paint < 1 s, p99 < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from textual import events

sys.path.insert(0, str(Path(__file__).parent))

from ledger_fixture import build_ledger

from reclaim_tui.config import Settings
from reclaim_tui.core.engine import Engine
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator.server import free_port
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.widgets.detail_pane import DetailPane


def ledger_copy(rows: int, workdir: Path) -> Path:
    template = Path(f"/tmp/reclaim-console-bench-{rows}.db")
    if not template.exists():
        print(f"building a {rows:,}-row ledger (cached at {template}) …", flush=True)
        seconds = build_ledger(template, rows)
        print(f"  built in {seconds:.1f}s", flush=True)
    target = workdir / "ledger.db"
    shutil.copyfile(template, target)
    return target


def start_emulator(port: int) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable, "-m", "reclaim_tui", "emulator", "--port", str(port),
        "--latency", "60", "--latency-max", "180",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, start_new_session=True)
    import socket

    for _ in range(100):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.05)
    raise RuntimeError("emulator did not start")


async def seed_inflight(db: Path, base_url: str, count: int, out: Path) -> float:
    started = time.perf_counter()
    backend = GeminiBackend(api_key=None, base_url=base_url)
    ledger = await Ledger.open(db)
    engine = Engine(ledger, backend, DirectorySink(out))
    jobs = [JobSpec(input=f"bench job {n}: summarise chapter {n}", model="m") for n in range(count)]
    report = await engine.submit(jobs)
    await ledger.close()
    await backend.aclose()
    assert report.counts["sent"] == count, report.summary()
    return time.perf_counter() - started


async def wait_for(predicate: Callable[[], bool], limit: float = 10.0) -> bool:
    deadline = time.perf_counter() + limit
    while not predicate():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.0005)
    return True


def key_event(key: str) -> events.Key:
    char = key if len(key) == 1 else None
    return events.Key(key, char)


async def press_and_wait(app: ReclaimApp, key: str, kind: str) -> float:
    """Post one key; return seconds until the console shows its effect: for a
    cursor move, the detail of the new row drawn; else a new window drawn."""
    table = app.table
    pane = app.query_one(DetailPane)
    renders, index, shows = table.renders, table.cursor_row, pane.shows
    t0 = time.perf_counter()
    app.post_message(key_event(key))
    if kind == "cursor":

        def shown() -> bool:
            moved = table.cursor_row != index
            return moved and pane.shows > shows and pane.shown_idem == table.current_idem()

        await wait_for(shown)
    else:
        await wait_for(
            lambda: table.renders > renders and app.state.window.view == app.state.view()
        )
    return time.perf_counter() - t0


async def apply_filter(app: ReclaimApp, text: str) -> float:
    before = app.table.renders
    t0 = time.perf_counter()
    bar = app.query_one("#filter")
    bar.value = text  # type: ignore[attr-defined]
    bar.post_message(bar.Submitted(bar, text))  # type: ignore[attr-defined]
    await wait_for(lambda: app.table.renders > before and app.state.filter_text == text, 30.0)
    return time.perf_counter() - t0


def script(presses: int) -> list[tuple[str, str]]:
    """A realistic mix: tab switches, cursor runs, window paging."""
    steps: list[tuple[str, str]] = []
    tabs = "12345678"
    n = 0
    while len(steps) < presses:
        steps.append((tabs[n % 8], "tab"))
        steps += [("down", "cursor")] * 5
        steps.append(("G", "page"))  # the last window of the view
        steps += [("up", "cursor")] * 2
        steps.append(("g", "page"))  # back to the first
        n += 1
    return steps[:presses]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    db: Path, base_url: str, presses: int, out: Path, engine: str
) -> dict[str, list[float]]:
    settings = Settings(db=str(db), base_url=base_url, out=str(out))
    # Imports and (thread) the SDK client are built here: not the UI's time.
    backend = GeminiBackend(api_key=None, base_url=base_url) if engine == "thread" else None
    app = make_app(settings, interval=2.0, backend=backend)
    t0 = time.perf_counter()
    timings: dict[str, list[float]] = {}
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(lambda: app.table.row_count > 0, 30.0)
        timings["first paint"] = [time.perf_counter() - t0]
        await wait_for(lambda: bool(app.state.counts), 30.0)
        timings["first counts"] = [time.perf_counter() - t0]
        await pilot.pause(3.0)  # let the loop reach its stride
        for key, kind in script(presses):
            rows = app.table.row_count
            if kind == "cursor" and rows < 2:
                continue  # nothing to move to in a one-row tab
            if kind == "cursor" and key == "down" and app.table.cursor_row >= rows - 1:
                kind = "page" if app.table.has_after else "skip"
            if kind == "cursor" and key == "up" and app.table.cursor_row <= 0:
                kind = "page" if app.table.has_before else "skip"
            if kind == "skip":
                continue
            cpu = time.thread_time()
            spent = await press_and_wait(app, key, kind)
            timings.setdefault("_ui_cpu", []).append(time.thread_time() - cpu)
            if os.environ.get("BENCH_DEBUG"):
                print(
                    key, kind, f"{spent * 1000:.2f}", app.table.cursor_row, app.table.current_idem()
                )
            timings.setdefault(kind, []).append(spent)
            await asyncio.sleep(0.02)  # an operator's pace, and room for the loop to run
        for text in ("status:failed", "model:pro", "error:attempts", "chapter 7", ""):
            timings.setdefault("filter", []).append(await apply_filter(app, text))
        ticks = [line for line in app.query_one("#log").lines]
        timings["_ticks"] = [float(len(ticks))]
    return timings


def report(timings: dict[str, list[float]]) -> None:
    print(f"\n{'measure':<14} {'n':>5} {'p50 ms':>9} {'p99 ms':>9} {'max ms':>9}")
    everything: list[float] = []
    for name, values in timings.items():
        if name.startswith("_"):
            continue
        if name not in ("first paint", "first counts"):
            everything += values
        print(
            f"{name:<14} {len(values):>5} {pct(values, 0.5) * 1000:>9.1f}"
            f" {pct(values, 0.99) * 1000:>9.1f} {max(values) * 1000:>9.1f}"
        )
    keys = [v for k, vs in timings.items() if k in ("tab", "cursor", "page") for v in vs]
    print(
        f"{'keys (no filter)':<14} {len(keys):>5} {pct(keys, 0.5) * 1000:>9.1f}"
        f" {pct(keys, 0.99) * 1000:>9.1f} {max(keys) * 1000:>9.1f}"
    )
    cpu = timings["_ui_cpu"]
    print(
        f"{'UI thread CPU':<14} {len(cpu):>5} {pct(cpu, 0.5) * 1000:>9.1f}"
        f" {pct(cpu, 0.99) * 1000:>9.1f} {max(cpu) * 1000:>9.1f}"
        "   (per key; the rest of a key's time is waiting: SQL, GIL, a busy CPU)"
    )
    print(f"loop log lines during the run: {int(timings['_ticks'][0])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--inflight", type=int, default=1000)
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--engine", choices=("process", "thread"), default="process")
    args = parser.parse_args()
    workdir = args.workdir or Path(f"/tmp/reclaim-console-bench-run-{os.getpid()}")
    workdir.mkdir(parents=True, exist_ok=True)
    db = ledger_copy(args.rows, workdir)
    port = free_port()
    emulator = start_emulator(port)
    base_url = f"http://127.0.0.1:{port}"
    try:
        seconds = asyncio.run(seed_inflight(db, base_url, args.inflight, workdir / "out"))
        print(f"{args.inflight} jobs in flight on the emulator (created in {seconds:.1f}s)")
        timings = asyncio.run(measure(db, base_url, args.presses, workdir / "out", args.engine))
        print(f"ledger: {args.rows:,} synthetic rows + {args.inflight} live; loop every 2 s")
        print(f"engine: in a {args.engine}; load average {os.getloadavg()[0]:.2f}")
        report(timings)
    finally:
        os.killpg(emulator.pid, signal.SIGTERM)
        emulator.wait(10)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
