"""Benchmark 4: the ledger alone.

N jobs through every state (reserving → submitted → done → consumed) with
the in-memory fake backend and a no-op sink, `synchronous=FULL`, on a real
file. Prints jobs/s and peak memory (tracemalloc + ru_maxrss), median of
--runs. Side by side: the original design's ledger code (baseline
seed_ledger.py) driven with a stub client, i.e. the same SQLite work it does
per job, with no network either.

    python benchmarks/ledger_only.py [--jobs 100000] [--runs 3] [--pg auto|URL] [--huey]
        [--pgqueuer] [--lanes 1,2] [--lane-concurrency N] [--statements] [--results FILE]

`--huey` adds an anchor from outside: huey's SqliteHuey (a task queue people
pick for one machine; `pip install huey`) with fsync on, each job enqueued,
dequeued, executed and its result stored, on the same kind of file. It keeps no
history, no leases and no spec: a floor for what one SQLite queue costs per
job, not a like-for-like ledger. Skipped, and said, when huey is not installed.

`--pg` adds the same run on PostgreSQL (synchronous_commit=on; `auto`: a
throwaway local server, see benchmarks/postgres.py), a database per run, with
what each run cost the server: commits per job (`pg_stat_database`) and the
server's CPU ms per job (/proc; benchmarks/_pg_anchor.py). `--pgqueuer` adds
pgqueuer on the same server in the same rounds (`pip install pgqueuer`;
skipped, and said, when absent). `--lanes 1,2` runs ours on PostgreSQL once per
lane count in each round (core/engine/lanes.py: the send and reclaim passes as
that many claim–write loops, each on a connection of its own; the 64 calls in
flight shared out), each a design of its own; `--lane-concurrency N` gives each
lane N calls in flight instead (the run's `--concurrency` lanes × N: two lanes
as wide as one each, the shared-out lanes' smaller batches left out of the
comparison). On SQLite, our commits per job are counted
too (every COMMIT on the ledger's connection, in an untimed run of its own:
the trace that counts them slows the run). `--results FILE` writes the
figures as a results file (scripts/perf_page.py makes the page from it).
`--statements` prints, after the table, what SQLite ran per job in that
untimed run: each statement's first words (a trigger's body as
`-- TRIGGER name`), the rows `executemany` steps counted one by one.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_baseline, median, table
from _pg_anchor import ServerCost, pgqueuer_installed, run_pgqueuer
from _processes import run_processes

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec, StoredResult
from reclaim_tui.core.sinks import CallableSink


async def _noop(idem: str, result: StoredResult) -> None:
    return None


async def run_ours(
    n: int,
    workdir: Path,
    batch: int,
    db: str = "",
    *,
    concurrency: int = 64,
    prepare: Callable[[Ledger], Awaitable[None]] | None = None,
    count_commits: bool = False,
    finish: Callable[[Ledger], Awaitable[None]] | None = None,
    lanes: int = 1,
) -> tuple[float, float]:
    """N jobs through every state; (jobs/s, peak RSS MiB). `prepare` runs on the
    fresh ledger before the clock starts (ledger_profile.py's schema variants).
    `count_commits` traces every statement on SQLite's connection to count its
    COMMITs; the trace expands each statement's text with its parameters, which
    costs that thread a third of its time, so the timed runs leave it off and
    the count comes from a run of its own. `finish` runs on the ledger after
    the clock stops, before it is closed (ledger_profile.py reads the WAL's
    size there). `lanes`: on PostgreSQL, connections for that many lanes."""
    clock = ManualClock()
    ledger = await open_ledger(db or workdir / "ours.db", clock=clock)
    connection = getattr(ledger, "connection", None)
    if count_commits and not db and connection is not None:
        await connection.set_trace_callback(_count_commit)
        _count_calls(connection)
    if prepare is not None:
        await prepare(ledger)
    others = [await open_ledger(db, clock=clock) for _ in range(lanes - 1)] if db else []
    fake = FakeBackend(clock=clock, latency=0.0)
    engine = Engine(
        ledger,
        fake,
        CallableSink(_noop),
        owner="bench|1|x",
        config=EngineConfig(batch_size=batch, concurrency=concurrency),
        lane_ledgers=others,
    )
    jobs = [JobSpec(input=f"job number {i}", model="m") for i in range(n)]
    start, cpu = time.perf_counter(), time.process_time()
    await engine.submit(jobs)
    clock.advance(5)
    report = await engine.tick()
    elapsed = time.perf_counter() - start
    _CPU[0] = time.process_time() - cpu
    counts = await ledger.counts()
    if finish is not None:
        await finish(ledger)
    for other in others:
        await other.close()
    await ledger.close()
    assert report.counts["consumed"] == n, report.summary()
    assert counts == {"consumed": (n, counts["consumed"][1])}
    return n / elapsed, _max_rss_mib()


_COMMITS = [0]
#: statement (its first words) -> times SQLite began it, in the counting run
_STATEMENTS: collections.Counter[str] = collections.Counter()
#: CPU seconds the measured run took in this process (every thread)
_CPU = [0.0]


#: calls handed to aiosqlite's thread (each a future, a queue put and two
#: wake-ups), in the counting run
_CALLS = [0]


def _count_calls(connection: Any) -> None:
    """Count every call the ledger hands to `connection`'s thread (aiosqlite
    runs each public method, and the ledger's whole transactions, through
    `_execute`)."""
    real = connection._execute

    async def counted(fn: Any, *args: Any, **kw: Any) -> Any:
        _CALLS[0] += 1
        return await real(fn, *args, **kw)

    connection._execute = counted


def _count_commit(sql: str) -> None:
    if sql == "COMMIT":
        _COMMITS[0] += 1
    _STATEMENTS[_statement_kind(sql)] += 1


def _statement_kind(sql: str) -> str:
    """A traced statement without its values: its first words."""
    words = " ".join(sql.split())
    return words if words.startswith("--") else words[:48]


def run_baseline(n: int, workdir: Path) -> tuple[float, float]:
    seed = load_baseline()
    ids = iter(range(10**9))

    class StubInteractions:
        def create(self, **kw: object) -> SimpleNamespace:
            return SimpleNamespace(id=f"i{next(ids)}", status="in_progress")

        def get(self, handle: str) -> SimpleNamespace:
            return SimpleNamespace(id=handle, status="completed", model_dump_json=lambda: "{}")

    seed.client = SimpleNamespace(interactions=StubInteractions())
    jobs = [{"input": f"job number {i}"} for i in range(n)]
    delivered = []
    start, cpu = time.perf_counter(), time.process_time()
    seed.tick(str(workdir / "seed.db"), jobs, lambda idem, op: delivered.append(idem))
    seed.tick(str(workdir / "seed.db"), [], lambda idem, op: delivered.append(idem))
    elapsed = time.perf_counter() - start
    _CPU[0] = time.process_time() - cpu
    assert len(delivered) == n
    return n / elapsed, _max_rss_mib()


def run_huey(n: int, workdir: Path) -> tuple[float, float]:
    from huey import SqliteHuey

    huey = SqliteHuey(filename=str(workdir / "huey.db"), fsync=True, results=True)

    @huey.task()
    def job(number: int) -> int:
        return number

    start, cpu = time.perf_counter(), time.process_time()
    for i in range(n):
        job(i)
    done = 0
    while (task := huey.dequeue()) is not None:
        huey.execute(task)
        done += 1
    elapsed = time.perf_counter() - start
    _CPU[0] = time.process_time() - cpu
    assert done == n
    return n / elapsed, _max_rss_mib()


def _huey_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("huey") is not None


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(which: str, n: int, batch: int, db: str = "", lanes: int = 1, conc: int = 64) -> None:
    """One measurement in a fresh process, so peak memory is this run's own."""
    with tempfile.TemporaryDirectory() as d:
        if which in ("ours", "ours-commits"):
            counting = which == "ours-commits"
            run = run_ours(
                n, Path(d), batch, db, count_commits=counting, lanes=lanes, concurrency=conc
            )
            rate, rss = asyncio.run(run)
        elif which == "pgqueuer":
            cpu = time.process_time()
            rate, rss = asyncio.run(run_pgqueuer(n, db)), _max_rss_mib()
            _CPU[0] = time.process_time() - cpu  # its schema's install included
        elif which == "huey":
            rate, rss = run_huey(n, Path(d))
        else:
            rate, rss = run_baseline(n, Path(d))
    figures = {"rate": rate, "rss": rss, "commits": _COMMITS[0] / n, "cpu": _CPU[0]}
    figures["calls"] = _CALLS[0] / n
    print(json.dumps({**figures, "statements": {k: v / n for k, v in _STATEMENTS.items()}}))


def _measure(
    which: str, n: int, batch: int, db: str = "", lanes: int = 1, conc: int = 64
) -> tuple[float, float, float, float]:
    """(jobs/s, peak RSS MiB, commits per job (SQLite: ours only), the
    process's CPU ms per job) of one run in a fresh process."""
    data = _run_child(which, n, batch, db, lanes, conc)
    return data["rate"], data["rss"], data["commits"], data["cpu"] * 1000 / n


def _run_child(
    which: str, n: int, batch: int, db: str = "", lanes: int = 1, conc: int = 64
) -> dict[str, Any]:
    """What one run in a fresh process printed (see _child)."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            which,
            "--jobs",
            str(n),
            "--batch",
            str(batch),
            "--db",
            db,
            "--lanes",
            str(lanes),
            "--concurrency",
            str(conc),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def _on_pg(pg: Any, which: str, n: int, batch: int, lanes: int = 1, conc: int = 64) -> Figures:
    """One run in a fresh database of `pg`: (jobs/s, peak RSS MiB, commits
    per job, server CPU ms per job, client CPU ms per job)."""
    url = pg.create()
    cost = ServerCost(pg, url.rsplit("/", 1)[-1].split("?")[0])
    try:
        cost.start()
        rate, rss, _, client = _measure(which, n, batch, url, lanes, conc)
        commits, cpu = cost.stop()
    finally:
        pg.drop(url)
    return rate, rss, commits / n, cpu * 1000 / n, client


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--pg", default=None, help="also on PostgreSQL: auto or a server's URL")
    ap.add_argument("--huey", action="store_true", help="add huey's SqliteHuey as an anchor")
    ap.add_argument("--pgqueuer", action="store_true", help="add pgqueuer on --pg's server")
    ap.add_argument("--results", default="", help="write the figures as this results file")
    ap.add_argument("--statements", action="store_true", help="print SQLite's statements per job")
    ap.add_argument(
        "--lanes",
        default="1",
        help="ours on PostgreSQL with each of these lane counts (comma-separated)",
    )
    ap.add_argument(
        "--lane-concurrency",
        type=int,
        default=0,
        help="calls in flight a lane (default: the 64 shared out over the lanes)",
    )
    ap.add_argument(
        "--processes",
        default="",
        help="ours on SQLite also as that many processes on one ledger (comma-separated)",
    )
    ap.add_argument("--concurrency", type=int, default=64, help=argparse.SUPPRESS)
    ap.add_argument(
        "--child",
        choices=["ours", "ours-commits", "baseline", "huey", "pgqueuer"],
        help=argparse.SUPPRESS,
    )
    ap.add_argument("--db", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child, a.jobs, a.batch, a.db, int(a.lanes), a.concurrency)
        return
    lane_counts = [int(n) for n in a.lanes.split(",")]
    process_counts = [int(n) for n in a.processes.split(",") if n]
    waits: dict[str, list[float]] = {}
    from postgres import PgDatabases

    pg = PgDatabases(a.pg) if a.pg else None
    huey = a.huey and _huey_installed()
    if a.huey and not huey:
        print("huey is not installed (pip install huey): its anchor is left out")
    pgq = a.pgqueuer and pg is not None and pgqueuer_installed()
    if a.pgqueuer and not pgq:
        why = "no --pg server" if pg is None else "pgqueuer is not installed (pip install pgqueuer)"
        print(f"{why}: the pgqueuer anchor is left out")
    # design -> its Figures, one a round
    runs: dict[str, list[Figures]] = {}
    loads = [_load()]
    try:
        # SQLite's commits per job, from an untimed run (see run_ours)
        counted = _run_child("ours-commits", a.jobs, a.batch)
        commits = counted["commits"]
        for _ in range(a.runs):
            rate, rss, _, client = _measure("ours", a.jobs, a.batch)
            runs.setdefault(OURS, []).append((rate, rss, commits, None, client))
            for procs in process_counts:
                with tempfile.TemporaryDirectory() as d:
                    rate, client, waited = run_processes(a.jobs, procs, a.batch, Path(d))
                runs.setdefault(_ours_procs(procs), []).append((rate, None, None, None, client))
                waits.setdefault(_ours_procs(procs), []).append(waited)
            for lanes in lane_counts if pg is not None else []:
                conc = lanes * a.lane_concurrency if a.lane_concurrency else 64
                on_pg = _on_pg(pg, "ours", a.jobs, a.batch, lanes, conc)
                runs.setdefault(_ours_pg(lanes, a.lane_concurrency), []).append(on_pg)
            if pgq:
                runs.setdefault(PGQ, []).append(_on_pg(pg, "pgqueuer", a.jobs, a.batch))
            if not a.skip_baseline:
                rate, rss, _, client = _measure("baseline", a.jobs, a.batch)
                runs.setdefault(SEED, []).append((rate, rss, None, None, client))
            if huey:
                rate, rss, _, client = _measure("huey", a.jobs, a.batch)
                runs.setdefault(HUEY, []).append((rate, rss, None, None, client))
            loads.append(_load())
    finally:
        if pg is not None:
            pg.close()
    load = f"{min(loads):.1f}–{max(loads):.1f} (1-minute load average before and after each round)"
    print(
        f"Ledger alone, SQLite synchronous=FULL / PostgreSQL synchronous_commit=on, {a.runs}"
        f" rounds, each run in a fresh process, medians; load {load}"
    )
    figures = {name: _medians(got) for name, got in runs.items()}
    rows = [
        [name, a.jobs, f[0], *(_opt(v, s) for v, s in zip(f[1:], _SPECS, strict=True))]
        for name, f in figures.items()
    ]
    heads = ["design", "jobs", "jobs/s", "peak RSS MiB", "commits/job", "server CPU ms/job"]
    print(table([*heads, "client CPU ms/job"], rows))
    pairs = [(OURS, SEED), (OURS, HUEY)]
    for procs in process_counts:
        pairs += [(_ours_procs(procs), SEED), (_ours_procs(procs), HUEY)]
    if len(process_counts) > 1:
        first = _ours_procs(process_counts[0])
        pairs += [(_ours_procs(n), first) for n in process_counts[1:]]
    for lanes in lane_counts:
        name = _ours_pg(lanes, a.lane_concurrency)
        pairs += [(name, PGQ), (name, OURS)]
    if len(lane_counts) > 1:
        first = _ours_pg(lane_counts[0], a.lane_concurrency)
        pairs += [(_ours_pg(n, a.lane_concurrency), first) for n in lane_counts[1:]]
    ratios = {
        f"{top} / {bottom}": _ratios(runs[top], runs[bottom])
        for top, bottom in pairs
        if top in runs and bottom in runs
    }
    for name, each in ratios.items():
        rounds = ", ".join(f"{r:.2f}" for r in each)
        print(f"ratio {name}: median {median(each):.2f}x (rounds: {rounds})")
    for name, each in waits.items():
        print(f"{name}: {median(each):.4f} writes a job waited for their turn (median)")
    print(
        f"SQLite: {counted['calls']:.4f} calls to aiosqlite's thread per job"
        " (the untimed counting run)"
    )
    if a.statements:
        print(_statements_table(counted["statements"]))
    if a.results:
        _write_results(Path(a.results), a, figures, ratios, load)


def _statements_table(per_job: dict[str, float]) -> str:
    """SQLite's statements per job of the counting run, most first."""
    rows = sorted(per_job.items(), key=lambda kv: -kv[1])
    body = [[kind, f"{count:.3f}"] for kind, count in rows]
    body.append(["all", f"{sum(per_job.values()):.3f}"])
    heading = "\nSQLite statements per job (the untimed run):\n"
    return heading + table(["statement", "per job"], body)


OURS, OURS_PG, SEED, HUEY = "reclaim-tui", "reclaim-tui on PostgreSQL", "seed baseline", "huey"
PGQ = "pgqueuer"


def _ours_procs(procs: int) -> str:
    """The design name of ours on SQLite as `procs` processes (benchmarks/_processes.py)."""
    return f"{OURS}, {procs} process{'es' if procs > 1 else ''} on one file"


def _ours_pg(lanes: int, per_lane: int = 0) -> str:
    """The design name of ours on PostgreSQL with `lanes` lanes (of
    `per_lane` calls in flight each, when given)."""
    if lanes == 1:
        return OURS_PG
    return f"{OURS_PG}, {lanes} lanes" + (f" × {per_lane} calls" if per_lane else "")


def _load() -> float:
    print(f"/proc/loadavg: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    return os.getloadavg()[0]


Figures = tuple[float, float | None, float | None, float | None, float | None]


def _medians(got: list[Figures]) -> Figures:
    def of(i: int) -> float | None:
        values = [g[i] for g in got if g[i] is not None]
        return median(values) if values else None  # type: ignore[arg-type]

    return (of(0) or 0.0, of(1), of(2), of(3), of(4))


#: how the figures after jobs/s are printed: peak RSS, commits, server CPU, client CPU
_SPECS = (".1f", ".4f", ".3f", ".3f")


def _opt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _ratios(top: list[Any], bottom: list[Any]) -> list[float]:
    """jobs/s of `top` over `bottom`, round by round (the same round's load)."""
    return [t[0] / b[0] for t, b in zip(top, bottom, strict=True)]


def _write_results(
    path: Path,
    a: argparse.Namespace,
    figures: dict[str, Figures],
    ratios: dict[str, list[float]],
    load: str,
) -> None:
    """A results file (benchmarks/results/*.json) of this run's medians: its
    `designs` are what scripts/perf_page.py tabulates and projects from."""
    import datetime
    import platform

    now = datetime.datetime.now(datetime.UTC)
    flags = [f"--jobs {a.jobs}", f"--runs {a.runs}"]
    flags += [f"--pg {a.pg}"] if a.pg else []
    flags += ["--pgqueuer"] if a.pgqueuer else []
    flags += ["--huey"] if a.huey else []
    flags += ["--skip-baseline"] if a.skip_baseline else []
    flags += [f"--lanes {a.lanes}"] if a.lanes != "1" else []
    flags += [f"--lane-concurrency {a.lane_concurrency}"] if a.lane_concurrency else []
    flags += [f"--processes {a.processes}"] if a.processes else []
    if a.pg:
        title = "The ledger alone on PostgreSQL, beside pgqueuer"
        machine = (
            " a throwaway PostgreSQL on the same cores, fsync and synchronous_commit on;"
            " SQLite in WAL, synchronous=FULL"
        )
    else:
        title = "The ledger alone on SQLite, one process and several on one file"
        where = "a tmpfs" if tempfile.gettempdir().startswith("/dev/shm") else "the disk"
        machine = f" SQLite in WAL, synchronous=FULL, on {where} ({tempfile.gettempdir()})"
    tmpdir = f"TMPDIR={os.environ['TMPDIR']} " if os.environ.get("TMPDIR") else ""
    result = {
        "title": title,
        "command": f"{tmpdir}python benchmarks/ledger_only.py {' '.join(flags)} --results {path}",
        "date": now.strftime("%Y-%m-%d"),
        "time_utc": now.strftime("%H:%M"),
        "machine": f"{os.cpu_count()} cores, {platform.system()};{machine}",
        "load": load,
        "rows": [],
        "designs": [
            {
                "design": name,
                "jobs": a.jobs,
                "jobs_per_s": round(f[0], 1),
                "commits_per_job": None if f[2] is None else round(f[2], 4),
                "server_cpu_ms_per_job": None if f[3] is None else round(f[3], 3),
                "client_cpu_ms_per_job": None if f[4] is None else round(f[4], 3),
            }
            for name, f in figures.items()
        ],
        "ratios": {name: [round(r, 3) for r in each] for name, each in ratios.items()},
    }
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
