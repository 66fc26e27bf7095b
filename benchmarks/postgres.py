"""Benchmark (issue 13): one ledger shared by 1, 2 and 4 tick processes, on
PostgreSQL and on SQLite, with the fake backend and with the emulator.

N jobs are reserved first (one `insert_jobs`), then K worker processes start
at once, each with its own owner identity (RECLAIM_OWNER_HOST: as if on K
hosts), each running `Engine.tick()` in a loop until no row is active. The
clock runs from the workers' start to the last row consumed. Every run checks
its result: all N rows consumed, N creates (no job sent twice), N deliveries.

  fake      a backend in each worker that answers at once and derives a get
            from the handle alone (so any worker can poll any row): the
            ledger's own cost, shared by K processes;
  emulator  `reclaim-tui emulator` in its own process, latency 0, through
            google-genai: the whole path (this 2-core machine runs the
            emulator, the server and the workers on the same cores).

    python benchmarks/postgres.py [--jobs 2000] [--runs 3] [--workers 1,2,4]
                                  [--backends fake,emulator] [--pg auto|URL]
                                  [--server-cpus 0 --client-cpus 1]

Besides the wall clock, each row gives the CPU a job cost, in medians: the
workers' (getrusage of the reaped worker processes) plus, for `--pg auto`,
the server's (/proc: the postmaster, its processes and those it reaped),
and the server's alone. On a loaded machine the wall clock is shared with
whatever else runs; the CPU per job is what the work itself costs.

`--pg auto` starts a throwaway PostgreSQL server (tests/helpers/postgres.py:
Debian's postgresql package, initdb + pg_ctl on a free loopback port) with
fsync and synchronous_commit on; a URL uses that server (a database per run
is created in it and dropped). `--server-cpus`/`--client-cpus` pin the `auto`
server and the workers to CPUs (sched_setaffinity, as `taskset` does): on a
small machine, the server on its own cores, so K workers share the others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))  # this tree's reclaim_tui, not an installed one

from _common import median, table  # noqa: E402


# -- a worker process ----------------------------------------------------------------
def _stateless_fake() -> Any:
    from reclaim_tui.core.backend import map_api_status
    from reclaim_tui.core.fakes import FakeBackend
    from reclaim_tui.core.models import JobSpec, RemoteInteraction

    def done(handle: str) -> RemoteInteraction:
        text = f"result of {handle}"
        raw = {"id": handle, "status": "completed", "steps": [
            {"type": "model_output", "content": [{"type": "text", "text": text}]}]}  # fmt: skip
        return RemoteInteraction(
            id=handle, state=map_api_status("completed"), api_status="completed",
            output_text=text, usage={"total_output_tokens": 3}, raw=raw,
        )  # fmt: skip

    class StatelessFake(FakeBackend):
        """Completes at once; any process can `get` any handle."""

        async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
            self.calls["create"] += 1
            return done(f"fk-{idem}")

        async def get(self, handle: str) -> RemoteInteraction:
            self.calls["get"] += 1
            return done(handle)

    return StatelessFake(latency=0.0)


async def _worker(db: str, backend: str, base_url: str | None, out: Path) -> dict[str, Any]:
    from reclaim_tui.bootstrap import make_backend
    from reclaim_tui.config import Settings
    from reclaim_tui.core.engine.engine import Engine, EngineConfig
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.models import StoredResult
    from reclaim_tui.core.sinks import CallableSink

    delivered: list[str] = []

    async def sink(idem: str, result: StoredResult) -> None:
        delivered.append(idem)

    ledger = await open_ledger(db, busy_timeout=30)
    if backend == "fake":
        api = _stateless_fake()
    else:
        from _emulator import API_KEY

        api = make_backend(Settings(db=db, base_url=base_url, api_key=API_KEY).validate())
    engine = Engine(
        ledger, api, CallableSink(sink),
        config=EngineConfig(first_poll=0.0, concurrency=16, batch_size=500),
    )  # fmt: skip
    creates = 0
    try:
        while True:
            report = await engine.tick()
            if engine.circuit.open:
                raise SystemExit(f"the API refused us: {report.summary()}")
            counts = await ledger.counts()
            if not any(counts.get(s, (0, None))[0] for s in ("reserving", "submitted", "done")):
                break
            if not report.counts.get("consumed") and not report.counts.get("submitted"):
                await asyncio.sleep(0.02)  # the rows left are another worker's
        creates = getattr(api, "calls", {}).get("create", 0)
    finally:
        await api.aclose()
        await ledger.close()
    return {"delivered": len(delivered), "creates": creates}


# -- the parent ----------------------------------------------------------------------
class PgDatabases:
    """A database per run on a server (started here with `auto`; stopped by
    `close`, also when the benchmark is stopped with SIGTERM)."""

    def __init__(self, spec: str, cpus: set[int] | None = None) -> None:
        self.server: Any = None
        # SIGTERM (timeout, kill) ends the run through its finally blocks,
        # which stop the server, instead of leaving it running.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        if spec == "auto":
            from tests.helpers.postgres import PostgresServer

            self.server = PostgresServer().start()
            self.base = self.server.dsn("postgres")
            if cpus:
                self.pin(cpus)
        else:
            self.base = spec

    def cpu_seconds(self) -> float:
        """CPU the `auto` server has used so far: the postmaster, the
        processes it runs, and those it has reaped (0 for a URL's server)."""
        if self.server is None:
            return 0.0
        postmaster = int((self.server.data_dir / "postmaster.pid").read_text().split()[0])
        ticks = 0
        for proc in Path("/proc").iterdir():
            try:
                if not proc.name.isdigit():
                    continue
                stat = (proc / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(proc.name) == postmaster:
                    ticks += sum(int(f) for f in fields[11:15])  # + reaped children
                elif int(fields[1]) == postmaster:
                    ticks += int(fields[11]) + int(fields[12])
            except (OSError, ValueError):
                pass  # gone meanwhile: counted in the postmaster's reaped children
        return ticks / os.sysconf("SC_CLK_TCK")

    def pin(self, cpus: set[int]) -> None:
        """The server on `cpus`: the postmaster and the processes it runs now
        (a backend forked later inherits the postmaster's affinity)."""
        postmaster = int((self.server.data_dir / "postmaster.pid").read_text().split()[0])
        for task in Path(f"/proc/{postmaster}/task").iterdir():
            os.sched_setaffinity(int(task.name), cpus)
        for proc in Path("/proc").iterdir():
            try:
                if (
                    proc.name.isdigit()
                    and int((proc / "stat").read_text().split()[3]) == postmaster
                ):
                    os.sched_setaffinity(int(proc.name), cpus)
            except (OSError, ValueError):
                pass  # gone meanwhile

    def create(self) -> str:
        import psycopg

        name = f"bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.base.rsplit("/", 1)[0] + f"/{name}"

    def drop(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def close(self) -> None:
        if self.server is not None:
            self.server.cleanup()


async def _reserve(db: str, n: int, tag: str) -> None:
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.core.fakes import FakeBackend
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.models import JobSpec
    from reclaim_tui.core.sinks import CallableSink

    async def nowhere(idem: str, result: Any) -> None:
        return None

    ledger = await open_ledger(db)
    specs = [JobSpec(input=f"{tag} job {i}", model="gemini-flash-latest") for i in range(n)]
    await Engine(ledger, FakeBackend(), CallableSink(nowhere)).submit(specs, send=False)
    await ledger.close()


async def _check(db: str, n: int) -> None:
    from reclaim_tui.core.ledger.opening import open_ledger

    ledger = await open_ledger(db, readonly=True, create=False)
    counts = await ledger.counts()
    await ledger.close()
    if counts.get("consumed", (0, None))[0] != n:
        raise RuntimeError(f"not every job consumed: {counts}")


#: (workers' CPU seconds, the server's) of each run, in order
CPU: list[tuple[float, float]] = []


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(
    engine: str, backend: str, workers: int, n: int, pg: PgDatabases | None,
    emulator_url: str | None, run: int, cpus: set[int] | None = None,
) -> float:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-pg-") as d:
        db = pg.create() if engine == "postgresql" and pg else str(Path(d) / "ledger.db")
        try:
            asyncio.run(_reserve(db, n, f"{engine}-{backend}-{workers}-{run}"))
            # This tree's code in the workers too (PYTHONPATH=ROOT alone ran
            # whatever reclaim_tui the interpreter had installed).
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
            started = time.perf_counter()
            workers_cpu = _children_cpu()
            server_cpu = pg.cpu_seconds() if engine == "postgresql" and pg else 0.0
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        db,
                        "--backend",
                        backend,
                        "--base-url",
                        emulator_url or "",
                        "--out",
                        str(Path(d) / f"out{i}"),
                    ],
                    env={**env, "RECLAIM_OWNER_HOST": f"bench-host-{i}"},
                    stdout=subprocess.PIPE,
                    preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
                    text=True,
                )
                for i in range(workers)
            ]
            results = []
            for proc in procs:
                out, _ = proc.communicate(timeout=1800)
                if proc.returncode != 0:
                    raise RuntimeError(f"worker exited {proc.returncode}")
                results.append(json.loads(out.strip().splitlines()[-1]))
            seconds = time.perf_counter() - started
            CPU.append(
                (
                    _children_cpu() - workers_cpu,
                    (pg.cpu_seconds() if engine == "postgresql" and pg else 0.0) - server_cpu,
                )
            )
            asyncio.run(_check(db, n))
            delivered = sum(r["delivered"] for r in results)
            if delivered != n:
                raise RuntimeError(f"{delivered} deliveries for {n} jobs")
            if backend == "fake" and sum(r["creates"] for r in results) != n:
                raise RuntimeError(f"creates {sum(r['creates'] for r in results)} != {n}")
            return seconds
        finally:
            if engine == "postgresql" and pg:
                pg.drop(db)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--backends", default="fake,emulator")
    ap.add_argument("--engines", default="postgresql,sqlite")
    ap.add_argument("--pg", default="auto", help="auto (a throwaway server) or a server's URL")
    ap.add_argument("--server-cpus", default="", help="pin the `auto` server to these CPUs (0,1)")
    ap.add_argument("--client-cpus", default="", help="pin the workers to these CPUs")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="fake", help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        result = asyncio.run(_worker(a.child, a.backend, a.base_url or None, Path(a.out)))
        print(json.dumps(result))
        return

    engines = a.engines.split(",")
    backends = a.backends.split(",")
    counts = [int(w) for w in a.workers.split(",")]
    server_cpus = {int(c) for c in a.server_cpus.split(",") if c}
    client_cpus = {int(c) for c in a.client_cpus.split(",") if c}
    pg = PgDatabases(a.pg, server_cpus) if "postgresql" in engines else None
    emu = None
    load = [os.getloadavg()[0]]
    try:
        if "emulator" in backends:
            from _emulator import EmulatorProcess

            emu = EmulatorProcess("--latency", "0").__enter__()
        rows = []
        for backend in backends:
            for engine in engines:
                base: float | None = None
                for workers in counts:
                    times = []
                    for run in range(a.runs):
                        if emu is not None:
                            emu.reset()
                        url = emu.base_url if emu is not None else None
                        seconds = one_run(
                            engine, backend, workers, a.jobs, pg, url, run, client_cpus
                        )
                        times.append(seconds)
                        load.append(os.getloadavg()[0])
                        print(f"  {engine} {backend} {workers} workers run {run + 1}:"
                              f" {seconds:.2f} s", file=sys.stderr)  # fmt: skip
                    rate = a.jobs / median(times)
                    base = base or rate
                    cpu = CPU[-a.runs :]
                    per_job = [1000 * (w + s) / a.jobs for w, s in cpu]
                    server = [1000 * s / a.jobs for _, s in cpu]
                    rows.append([engine, backend, workers, a.jobs, median(times), rate,
                                 f"{rate / base:.2f}x", f"{median(per_job):.2f}",
                                 f"{median(server):.2f}"])  # fmt: skip
    finally:
        if emu is not None:
            emu.__exit__(None, None, None)
        if pg is not None:
            pg.close()
    pinned = (
        f"; server on CPUs {a.server_cpus or 'any'}, workers on {a.client_cpus or 'any'}"
        if server_cpus or client_cpus
        else ""
    )
    print(f"One ledger, K tick processes as K hosts, {a.runs} runs each, medians;"
          f" load average {min(load):.1f}–{max(load):.1f} on {os.cpu_count()} cores"
          + pinned)  # fmt: skip
    print(table(["engine", "backend", "processes", "jobs", "seconds", "jobs/s",
                 "vs 1 process", "CPU ms/job", "server CPU ms/job"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
