"""What the PostgreSQL ledger's WAL is made of, relation by relation.

The run of ledger_only.py (N jobs through every state, the fake backend, a
no-op sink) in a fresh database of a throwaway server (`--pg auto`) or of a
server whose data directory this process can read (`--pg URL --data DIR`),
then `pg_waldump` over the run's WAL: its records per relation and record
type, a job's share of each. Each btree `INSERT_LEAF`/`INSERT_POST` is one
index entry written, so the index entries a job writes per index are read
there; beside them the table's updates and how many were HOT
(`pg_stat_user_tables`), the WAL bytes and the server's CPU a job. `--ddl`
runs statements on the fresh ledger before the clock starts (a schema
variant to count).

    python benchmarks/investigations/pg_wal_by_relation.py [--jobs 10000] [--ddl SQL]... [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
import psycopg
from ledger_only import run_ours
from postgres import PgDatabases

from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA

_RECORD = re.compile(r"rmgr: (\w+)\s.*?desc: (\w+).*?rel \d+/\d+/(\d+)")


def count(n: int, url: str, data_dir: Path, bin_dir: Path, ddl: list[str]) -> dict[str, Any]:
    """One run's WAL records a job, by (relation, resource manager, record type)."""
    marks: dict[str, str] = {}

    async def prepare(ledger: Ledger) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"SET search_path = {PG_SCHEMA}")
            for statement in ddl:
                conn.execute(statement)
            marks["start"] = str(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])  # type: ignore[index]

    with tempfile.TemporaryDirectory() as tmp:
        rate, _ = asyncio.run(run_ours(n, Path(tmp), 256, url, prepare=prepare))
    with psycopg.connect(url, autocommit=True) as conn:
        end = str(conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])  # type: ignore[index]
        names = dict(
            conn.execute(
                "SELECT pg_relation_filenode(c.oid)::text, c.relname FROM pg_class c"
                " JOIN pg_namespace s ON s.oid = c.relnamespace"
                " WHERE s.nspname = %s AND pg_relation_filenode(c.oid) IS NOT NULL",
                (PG_SCHEMA,),
            ).fetchall()
        )
        updates = conn.execute(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " WHERE schemaname = %s AND relname = 'jobs'",
            (PG_SCHEMA,),
        ).fetchone()
        wal = float(
            conn.execute(  # type: ignore[index]
                "SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", (end, marks["start"])
            ).fetchone()[0]
        )
    dump = subprocess.run(
        [str(bin_dir / "pg_waldump"), "-p", str(data_dir / "pg_wal"), "-s", marks["start"],
         "-e", end],
        capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    records: collections.Counter[tuple[str, str, str]] = collections.Counter()
    for line in dump.splitlines():
        found = _RECORD.search(line)
        if found and found.group(3) in names:
            records[(names[found.group(3)], found.group(1), found.group(2))] += 1
    entries: collections.Counter[str] = collections.Counter()
    for (rel, rmgr, kind), k in records.items():
        if rmgr in ("Btree", "Gin") and kind.startswith("INSERT") and kind != "INSERT_UPPER":
            entries[rel] += k
    return {
        "jobs_per_s": rate,
        "wal_bytes_per_job": wal / n,
        "jobs_updates_per_job": updates[0] / n if updates else None,
        "jobs_hot_updates_per_job": updates[1] / n if updates else None,
        "index_entries_per_job": {k: v / n for k, v in sorted(entries.items())},
        "jobs_index_entries_per_job": sum(v for k, v in entries.items() if k.startswith("jobs"))
        / n,
        "records_per_job": {" ".join(k): v / n for k, v in sorted(records.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--pg", default="auto", help="auto, or a server's URL (with --data)")
    ap.add_argument("--data", type=Path, help="the URL's server's data directory")
    ap.add_argument("--ddl", action="append", default=[], help="run on the fresh ledger first")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    pg = PgDatabases(a.pg)
    try:
        from tests.helpers.postgres import find_bin_dir

        data_dir = pg.server.data_dir if pg.server is not None else a.data
        if data_dir is None:
            sys.exit("--pg URL needs --data DIR (its server's data directory)")
        url = pg.create()
        try:
            cpu = pg.cpu_seconds()
            figures = count(a.jobs, url, Path(data_dir), find_bin_dir(), a.ddl)
            figures["server_cpu_ms_per_job"] = (pg.cpu_seconds() - cpu) * 1000 / a.jobs
        finally:
            pg.drop(url)
    finally:
        pg.close()
    if a.json:
        print(json.dumps(figures, indent=1))
        return
    print(
        f"{a.jobs} jobs: {figures['jobs_per_s']:.0f} jobs/s, server"
        f" {figures['server_cpu_ms_per_job']:.3f} CPU ms a job, WAL"
        f" {figures['wal_bytes_per_job']:.0f} B a job; jobs: {figures['jobs_updates_per_job']:.2f}"
        f" updates a job, {figures['jobs_hot_updates_per_job']:.2f} of them HOT"
    )
    print(f"index entries a job, jobs' indexes: {figures['jobs_index_entries_per_job']:.2f}")
    for name, per_job in figures["index_entries_per_job"].items():
        print(f"  {name:24} {per_job:6.2f}")
    print("WAL records a job (at least 0.05):")
    for what, per_job in figures["records_per_job"].items():
        if per_job >= 0.05:
            print(f"  {what:44} {per_job:6.2f}")


if __name__ == "__main__":
    main()
