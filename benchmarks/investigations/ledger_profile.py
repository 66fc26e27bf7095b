"""Where the ledger's time per job goes (issue 14: "ledger alone ≥ 12,000 jobs/s").

The run of ledger_only.py (N jobs through every state, the fake backend, a
no-op sink, `synchronous=FULL`), measured from inside: the time aiosqlite's
thread spends in each statement (and in COMMIT, i.e. fsync), the process's
CPU per job, and the same run with parts of the schema taken away or with
more creates in flight, to see which of them is the cap.

    python benchmarks/investigations/ledger_profile.py [--jobs 20000] [--runs 3]
        [--variants now,no_fts,id_indexes,no_sec_idx,no_events_idx,bare]
        [--concurrency 64,256,1000]

Variants (experiments only: each drops or reorders what the product needs —
the console's text search, its sorted pages, a row's history — so none is a
setting):
  now            the schema as it ships
  no_fts         without the text-search triggers (console filter, issue 14)
  id_indexes     the two sorted-page indexes ordered by integer id, not the key
  no_sec_idx     without those two indexes (state age, updated time)
  no_events_idx  without the index of a row's events
  bare           no_fts + no_sec_idx + no_events_idx
Each measurement runs in a fresh process; variants alternate within a run.
WAL KB/job comes from one more run per case, untimed, with automatic
checkpoints off: the WAL file's size at the end over the jobs (every frame
the run appended, a page and its header each).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from _common import median, table
from ledger_only import run_ours

from reclaim_tui.core.ledger.port import Ledger

_FTS = [
    "DROP TRIGGER jobs_fts_insert",
    "DROP TRIGGER jobs_fts_update",
    "DROP TRIGGER handles_fts_update",
    "DROP TRIGGER jobs_fts_move",
    "DROP TRIGGER handles_fts_move",
]
_SEC = ["DROP INDEX jobs_status_age", "DROP INDEX jobs_updated"]
_EVENTS = ["DROP INDEX events_job"]
VARIANTS: dict[str, list[str]] = {
    "now": [],
    "no_fts": _FTS,
    "id_indexes": [
        *_SEC,
        "CREATE INDEX jobs_status_age ON jobs(status, state_since, id)",
        "CREATE INDEX jobs_updated ON jobs(updated_at, id)",
    ],
    "no_sec_idx": _SEC,
    "no_events_idx": _EVENTS,
    "bare": [*_FTS, *_SEC, *_EVENTS],
}


def _time_statements() -> dict[str, list[float]]:
    """Wrap aiosqlite's queue so each call's CPU time in its thread (not the
    wall time: under load that counts the waits for a core and the GIL) is
    counted by statement (its first 70 characters). Returns the live
    {statement: [n, s]}."""
    import aiosqlite.core as core

    stats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    original = core.Connection._execute

    async def _execute(self: Any, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        sql = args[0] if args and isinstance(args[0], str) else ""
        name = getattr(fn, "__name__", "call")
        key = name + ": " + re.sub(r"\s+", " ", sql).strip()[:70]

        def timed(*a: Any, **k: Any) -> Any:
            start = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                entry = stats[key]
                entry[0] += 1
                entry[1] += time.thread_time() - start

        return await original(self, timed, *args, **kw)

    core.Connection._execute = _execute  # type: ignore[method-assign]
    return stats


def _child(n: int, variant: str, concurrency: int, wal: bool) -> None:
    stats = _time_statements()
    wal_bytes = [0]

    async def prepare(ledger: Ledger) -> None:
        for ddl in VARIANTS[variant]:
            async with ledger.write() as db:
                await db.execute(ddl)
        if wal:
            connection: Any = getattr(ledger, "connection")  # noqa: B009
            await connection.execute("PRAGMA wal_autocheckpoint = 0")
            await connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stats.clear()  # only the run itself

    async def finish(ledger: Ledger) -> None:
        if wal:
            wal_bytes[0] = os.path.getsize(str(getattr(ledger, "path")) + "-wal")  # noqa: B009

    with tempfile.TemporaryDirectory() as d:
        cpu0 = time.process_time()
        rate, _ = asyncio.run(
            run_ours(n, Path(d), 2000, concurrency=concurrency, prepare=prepare, finish=finish)
        )
        cpu = time.process_time() - cpu0
    sql = sum(s for _, s in stats.values())
    commits = int(stats.get("execute: COMMIT", [0, 0.0])[0])
    top = sorted(stats.items(), key=lambda kv: -kv[1][1])[:10]
    print(
        json.dumps(
            {
                "rate": rate,
                "sql_s": sql,
                "cpu_s": cpu,
                "commits": commits,
                "wal": wal_bytes[0],
                "top": [[k, int(c), s] for k, (c, s) in top],
            }
        )
    )


def _measure(n: int, variant: str, concurrency: int, wal: bool = False) -> dict[str, Any]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            variant,
            "--jobs",
            str(n),
            "--concurrency",
            str(concurrency),
            *(["--wal"] if wal else []),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--concurrency", default="64,1000")
    ap.add_argument("--child", choices=list(VARIANTS), help=argparse.SUPPRESS)
    ap.add_argument("--wal", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.jobs, a.child, int(a.concurrency), a.wal)
        return
    variants = a.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    cases = [("now", int(c)) for c in a.concurrency.split(",")]
    cases += [(v, 64) for v in variants if v != "now"]
    got: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in cases}
    load = [os.getloadavg()[0]]
    wal = {case: _measure(a.jobs, *case, wal=True)["wal"] for case in cases}
    for _ in range(a.runs):
        for case in cases:
            got[case].append(_measure(a.jobs, *case))
        load.append(os.getloadavg()[0])
    rows = []
    for (variant, conc), runs in got.items():
        rows.append(
            [
                variant,
                conc,
                median([r["rate"] for r in runs]),
                median([1e6 * r["sql_s"] / a.jobs for r in runs]),
                median([1e6 * r["cpu_s"] / a.jobs for r in runs]),
                median([r["commits"] for r in runs]),
                wal[(variant, conc)] / 1024 / a.jobs,
            ]
        )
    print(
        f"Ledger alone, {a.jobs:,} jobs, SQLite synchronous=FULL, {a.runs} runs per case in"
        f" fresh processes, alternating, medians; load {min(load):.1f}–{max(load):.1f}"
    )
    headers = ["schema", "in flight", "jobs/s", "SQL-thread CPU µs/job", "CPU µs/job", "commits"]
    headers.append("WAL KB/job")
    print(table(headers, rows))
    first = sorted(got[cases[0]], key=lambda r: r["rate"])[len(got[cases[0]]) // 2]
    print(f"\nSQL-thread CPU by statement (schema now, {cases[0][1]} in flight, the median run):")
    total = first["sql_s"]
    print(
        table(
            ["statement", "calls", "µs/job", "share"],
            [[k, c, 1e6 * s / a.jobs, f"{100 * s / total:.0f} %"] for k, c, s in first["top"]],
        )
    )


if __name__ == "__main__":
    main()
