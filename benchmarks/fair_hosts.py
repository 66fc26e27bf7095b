"""Benchmark (issue 23, point 6): fair work across hosts, and what a dead
host costs. One PostgreSQL ledger, N jobs reserved first, then:

  1 host      one worker process sends, polls and delivers them all;
  4 hosts     four worker processes (RECLAIM_OWNER_HOST: four hosts) at once;
  4, 1 killed the same, and once a quarter of the jobs are consumed the
              worker holding the most leases is SIGKILLed: its rows wait for
              their lease to run out (another host's holder is never judged
              dead), then the others take them. Also timed: until every row
              the killed worker did not hold is consumed.

Each worker: the engine over the emulator (google-genai, latency 0),
concurrency 16, batch 500, `--lease` seconds, `Engine.tick()` in a loop
until no row is active. Reported per scenario (medians of `--runs`): the
seconds to all consumed; the rows each worker sent (min–max); for the kill,
the rows the killed worker held (delayed a lease) and its creates in flight
(sent, answer not recorded), and the duplicates (creates the emulator made
beyond one per job), which must not exceed the creates in flight.

    python benchmarks/fair_hosts.py [--jobs 1000] [--runs 3] [--lease 30] [--pg auto|URL]
                                    [--scenarios 1,4,4k]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _common import median, table  # noqa: E402
from postgres import PgDatabases, _reserve  # noqa: E402


async def _worker(db: str, base_url: str, lease: float) -> dict[str, Any]:
    from _emulator import API_KEY

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
    api = make_backend(Settings(db=db, base_url=base_url, api_key=API_KEY).validate())
    config = EngineConfig(first_poll=0.0, concurrency=16, batch_size=500, lease_seconds=lease)
    engine = Engine(ledger, api, CallableSink(sink), config=config)
    sent = 0
    try:
        while True:
            report = await engine.tick()
            sent += report.counts.get("sent", 0)
            counts = await ledger.counts()
            if not any(counts.get(s, (0, None))[0] for s in ("reserving", "submitted", "done")):
                break
            if not report.counts.get("consumed") and not report.counts.get("submitted"):
                await asyncio.sleep(0.05)  # the rows left are another worker's
    finally:
        await api.aclose()
        await ledger.close()
    return {"delivered": len(delivered), "sent": sent}


def _query(db: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(db, autocommit=True) as conn:
        return list(conn.execute(sql).fetchall())


def _consumed(db: str) -> int:
    try:
        return int(
            _query(db, "SELECT count(*) FROM reclaim_tui.jobs WHERE status = 'consumed'")[0][0]
        )
    except Exception:  # the schema is made by the first worker
        return 0


def one_run(
    pg: PgDatabases, emu: Any, hosts: int, n: int, kill: bool, lease: float, run: int
) -> dict[str, Any]:
    db = pg.create()
    emu.reset()
    try:
        asyncio.run(_reserve(db, n, f"fair-{hosts}-{kill}-{run}"))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        with tempfile.TemporaryDirectory(prefix="bench-fair-") as d:
            started = time.perf_counter()
            procs = []
            for i in range(hosts):
                log = open(Path(d) / f"w{i}.out", "w")
                argv = [sys.executable, __file__, "--child", db, "--base-url", emu.base_url]
                argv += ["--lease", str(lease)]
                procs.append(
                    subprocess.Popen(
                        argv,
                        env={**env, "RECLAIM_OWNER_HOST": f"fair-host-{i}"},
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            out: dict[str, Any] = {"held": 0, "in_flight": 0}
            if kill:
                while _consumed(db) < n // 4:
                    time.sleep(0.05)
                by_host = _query(
                    db,
                    "SELECT split_part(lease_owner, '|', 1) AS host, count(*) FROM reclaim_tui.jobs"
                    " WHERE lease_owner IS NOT NULL"
                    " AND status IN ('reserving', 'submitted', 'done')"
                    " GROUP BY host ORDER BY count(*) DESC, host LIMIT 1",
                )
                victim = int(by_host[0][0].rsplit("-", 1)[1]) if by_host else 0
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                who = f"'fair-host-{victim}|%'"
                row = _query(
                    db,
                    "SELECT count(*), count(*) FILTER (WHERE status = 'reserving' AND inflight = 1)"
                    " FROM reclaim_tui.jobs WHERE status IN ('reserving', 'submitted', 'done')"
                    f" AND lease_owner LIKE {who}",
                )[0]
                out["held"], out["in_flight"] = int(row[0]), int(row[1])
                # The rows the dead host did not hold: consumed by the others,
                # without waiting for its leases.
                while _consumed(db) < n - out["held"] and any(p.poll() is None for p in procs):
                    time.sleep(0.05)
                out["rest"] = time.perf_counter() - started
            sent = []
            for i, proc in enumerate(procs):
                if proc.wait(timeout=1800) not in (0, -signal.SIGKILL):
                    text = (Path(d) / f"w{i}.out").read_text()[-3000:]
                    raise RuntimeError(f"worker {i} exited {proc.returncode}:\n{text}")
                if proc.returncode == 0:
                    lines = (Path(d) / f"w{i}.out").read_text().strip().splitlines()
                    sent.append(json.loads(lines[-1])["sent"])
            out["seconds"] = time.perf_counter() - started
        consumed = _consumed(db)
        if consumed != n:
            raise RuntimeError(f"{consumed} of {n} consumed")
        out["duplicates"] = int(emu.stats()["calls"]["create"]) - n
        out["sent"] = sent
        if out["duplicates"] > out["in_flight"]:
            raise RuntimeError(f"{out['duplicates']} duplicates > {out['in_flight']} in flight")
        return out
    finally:
        pg.drop(db)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lease", type=float, default=30.0)
    ap.add_argument("--pg", default="auto", help="auto (a throwaway server) or a server's URL")
    ap.add_argument("--scenarios", default="1,4,4k", help="hosts; k: one of them killed")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(asyncio.run(_worker(a.child, a.base_url, a.lease))))
        return
    from _emulator import EmulatorProcess

    pg = PgDatabases(a.pg)
    load = [os.getloadavg()[0]]
    rows = []
    try:
        with EmulatorProcess("--latency", "0") as emu:
            for scenario in a.scenarios.split(","):
                hosts, kill = int(scenario.rstrip("k")), scenario.endswith("k")
                runs = []
                for run in range(a.runs):
                    runs.append(one_run(pg, emu, hosts, a.jobs, kill, a.lease, run))
                    load.append(os.getloadavg()[0])
                    print(f"  {hosts} hosts kill={kill} run {run + 1}: {runs[-1]}", file=sys.stderr)
                sent = [s for r in runs for s in r["sent"]]
                rows.append([
                    f"{hosts}" + (", 1 killed" if kill else ""),
                    median([r["seconds"] for r in runs]),
                    median([r["rest"] for r in runs]) if kill else "-",
                    f"{min(sent)}–{max(sent)}",
                    median([r["held"] for r in runs]) if kill else "-",
                    median([r["in_flight"] for r in runs]) if kill else "-",
                    max(r["duplicates"] for r in runs),
                ])  # fmt: skip
    finally:
        pg.close()
    print(f"{a.jobs} jobs on one PostgreSQL ledger, emulator latency 0, lease {a.lease:g} s,"
          f" {a.runs} runs each, medians; load average {min(load):.1f}–{max(load):.1f}"
          f" on {os.cpu_count()} cores")  # fmt: skip
    print(table(["hosts", "s to all consumed", "s to all not held by the killed",
                 "sent per surviving host", "held by the killed",
                 "its creates in flight", "duplicates (max)"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
