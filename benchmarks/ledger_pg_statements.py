"""Where a job's PostgreSQL server time goes: the ledger-alone run of
benchmarks/ledger_only.py (N jobs through every state, the fake backend, a
no-op sink) on a throwaway server with pg_stat_statements loaded
(`shared_preload_libraries`, `pg_stat_statements.track_planning=on`).

Prints, for the run's database: the statements by total execution time, with
calls, planning and execution ms per job; statements and plans per job in
all; the rows each index was written (`pg_stat_user_indexes` does not count
writes, so the index sizes and the table's inserts/updates stand in); the
events written per job; and the server's CPU per job.

    python benchmarks/ledger_pg_statements.py [--jobs 2000] [--top 15]
        [--variant SQL] [--after SQL] [--lanes N]

`--variant` runs SQL on the fresh ledger before the clock starts (an
experiment: `DROP INDEX jobs_idem_trgm; …`, `ALTER INDEX … SET (fastupdate =
off)`); `--after` runs SQL once the run ended and prints its server CPU apart
(`SELECT gin_clean_pending_list('jobs_idem_trgm'::regclass)`). EXPLAIN_MS=N in
the environment logs the plan of every statement slower than N ms
(auto_explain, ANALYZE and BUFFERS) and prints the server's log.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from ledger_only import run_ours  # noqa: E402
from postgres import PgDatabases  # noqa: E402
from tests.helpers.postgres import PostgresServer  # noqa: E402

STATEMENTS = (
    "SELECT calls, plans, total_exec_time, total_plan_time, rows, query"
    " FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid"
    " WHERE d.datname = %s ORDER BY total_exec_time + total_plan_time DESC"
)


#: statements slower than this (ms) have their plan logged (auto_explain); -1: none
EXPLAIN_MS = int(__import__("os").environ.get("EXPLAIN_MS", "-1"))


class ProfiledServer(PostgresServer):
    """A throwaway server with pg_stat_statements loaded and planning tracked."""

    def _server_options(self) -> str:
        return (
            super()._server_options()
            + " -c shared_preload_libraries=pg_stat_statements,auto_explain"
            + f" -c auto_explain.log_min_duration={EXPLAIN_MS} -c auto_explain.log_analyze=on"
            + " -c auto_explain.log_buffers=on -c auto_explain.log_nested_statements=on"
            + " -c pg_stat_statements.track_planning=on -c pg_stat_statements.max=5000"
            + " -c track_functions=all"
        )


def report(base: str, url: str, n: int, top: int) -> None:
    import psycopg

    name = url.rsplit("/", 1)[-1]
    with psycopg.connect(base, autocommit=True) as conn:
        rows = conn.execute(STATEMENTS, (name,)).fetchall()
    calls = sum(r[0] for r in rows)
    plans = sum(r[1] for r in rows)
    exec_ms = sum(r[2] for r in rows)
    plan_ms = sum(r[3] for r in rows)
    print(f"statements/job {calls / n:.3f}  plans/job {plans / n:.3f}"
          f"  exec ms/job {exec_ms / n:.4f}  plan ms/job {plan_ms / n:.4f}")  # fmt: skip
    print(f"{'calls/job':>9} {'plans/job':>9} {'exec ms/job':>11} {'plan ms/job':>11}"
          f" {'rows/call':>9}  query")  # fmt: skip
    for c, p, e, pl, r, q in rows[:top]:
        text = " ".join(q.split())[:150]
        print(
            f"{c / n:9.3f} {p / n:9.3f} {e / n:11.4f} {pl / n:11.4f} {r / max(c, 1):9.1f}  {text}"
        )
    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute(
            "SELECT nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid"
            " WHERE c.relname = 'jobs' AND c.relkind = 'r' LIMIT 1"
        ).fetchone()
        print(f"schema: {schema}")
        for rel, tup_ins, tup_upd, hot in conn.execute(
            "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
            " ORDER BY n_tup_ins + n_tup_upd DESC"
        ).fetchall():
            print(
                f"table {rel:12} ins/job {tup_ins / n:.2f} upd/job {tup_upd / n:.2f}"
                f" hot {hot / n:.2f}"
            )
        for rel, idx, scans, size in conn.execute(
            "SELECT relname, indexrelname, idx_scan, pg_relation_size(indexrelid)"
            " FROM pg_stat_user_indexes ORDER BY pg_relation_size(indexrelid) DESC"
        ).fetchall():
            print(f"index {rel:10} {idx:22} scans/job {scans / n:.2f} KiB {size // 1024}")
        fns = conn.execute(
            "SELECT funcname, calls, total_time FROM pg_stat_user_functions"
        ).fetchall()
        for f, c, t in fns:
            print(f"function {f}: calls/job {c / n:.2f} ms/job {t / n:.4f}")


_EXITED = "exited or exiting: the run's backends, autovacuum workers"


def cpu_by_process(pg: PgDatabases) -> dict[str, float]:
    """CPU seconds so far of each of the server's processes, by its title
    (`postgres: walwriter`, a backend's database and client); exited ones
    (autovacuum workers, closed backends) under `reaped`."""
    import os

    postmaster = int((pg.server.data_dir / "postmaster.pid").read_text().split()[0])
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[str, float] = {}
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit():
                continue
            stat = (proc / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(proc.name) == postmaster:
                seen["postmaster"] = (int(fields[11]) + int(fields[12])) / tick
                exited = (int(fields[13]) + int(fields[14])) / tick
                seen[_EXITED] = seen.get(_EXITED, 0.0) + exited
            elif int(fields[1]) == postmaster:
                title = (proc / "cmdline").read_bytes().split(b"\0")[0].decode()
                title = " ".join(w for w in title.split() if not w[0].isdigit())
                title = title.split("(")[0].replace(" idle", "").strip() or _EXITED  # a zombie
                seen[title] = seen.get(title, 0.0) + (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return seen


def _wal_and_commits(base: str, url: str) -> tuple[int, int]:
    """The server's WAL position (bytes) and the run's database's commits."""
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn, (SELECT xact_commit"
            " FROM pg_stat_database WHERE datname = %s)",
            (url.rsplit("/", 1)[-1],),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1] or 0)


def _variant(sql: str) -> Any:
    if not sql:
        return None

    async def prepare(ledger: Any) -> None:
        async with ledger.write() as conn:
            for statement in sql.split(";"):
                if statement.strip():
                    await conn.execute(statement)

    return prepare


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument(
        "--variant", default="", help="SQL run on the fresh ledger first (an experiment)"
    )
    ap.add_argument("--after", default="", help="SQL run after the clock stops, its CPU apart")
    ap.add_argument("--lanes", type=int, default=1, help="ours with this many lanes")
    a = ap.parse_args()
    pg = PgDatabases.__new__(PgDatabases)
    pg.server = ProfiledServer().start()
    pg.base = pg.server.dsn("postgres")
    try:
        import psycopg

        with psycopg.connect(pg.base, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        url = pg.create()
        with psycopg.connect(pg.base, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_statements_reset()")
        wal_before, commits_before = _wal_and_commits(pg.base, url)
        before = pg.cpu_seconds()
        by_process = cpu_by_process(pg)
        with tempfile.TemporaryDirectory() as d:
            rate, _ = asyncio.run(
                run_ours(a.jobs, Path(d), a.batch, url, prepare=_variant(a.variant), lanes=a.lanes)
            )
        cpu = pg.cpu_seconds() - before
        wal_after, commits_after = _wal_and_commits(pg.base, url)
        for title, seconds in sorted(cpu_by_process(pg).items(), key=lambda kv: -kv[1]):
            spent = seconds - by_process.get(title, 0.0)
            if spent > 0:
                print(f"server CPU ms/job {spent * 1000 / a.jobs:.3f}  {title}")
        if a.after:
            mark = pg.cpu_seconds()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SET search_path TO reclaim_tui, public")
                for statement in a.after.split(";"):
                    if statement.strip():
                        conn.execute(statement)
            after = pg.cpu_seconds() - mark
            print(f"--after's statements: server CPU ms/job {after * 1000 / a.jobs:.3f}")
        print(f"{a.jobs} jobs: {rate:.0f} jobs/s, server CPU ms/job {cpu * 1000 / a.jobs:.3f}")
        print(
            f"WAL bytes/job {(wal_after - wal_before) / a.jobs:.0f}"
            f"  commits/job {(commits_after - commits_before) / a.jobs:.3f}"
        )
        report(pg.base, url, a.jobs, a.top)
        if EXPLAIN_MS >= 0:
            print(pg.server.log_file.read_text())
    finally:
        pg.close()


if __name__ == "__main__":
    main()
