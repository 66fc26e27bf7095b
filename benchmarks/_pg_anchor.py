"""PostgreSQL figures for benchmarks/ledger_only.py: pgqueuer as an anchor,
and what a run cost the server (commits and CPU per job).

pgqueuer (`pip install pgqueuer`, the `bench` extra) is a lean queue on
PostgreSQL: jobs enqueued in one statement, dequeued in batches, their
completions buffered and written in batches. Here N jobs are enqueued, then
dequeued and completed by a no-op entrypoint until the queue is empty
(`QueueExecutionMode.drain`), through psycopg like our ledger. It keeps no
history per job, no stored result and no spec: a floor for what one job
costs a PostgreSQL queue, not a like-for-like ledger.

`ServerCost` reads, around one run in its own database: the database's
committed transactions (`pg_stat_database.xact_commit`, read once every
backend of the run has left, so their statistics are flushed) and the
server's CPU (utime + stime of the postmaster, its processes and those it
reaped, from /proc; benchmarks/postgres.py `PgDatabases.cpu_seconds`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

__all__ = ["ServerCost", "pgqueuer_installed", "run_pgqueuer"]

#: jobs pgqueuer dequeues at a time: what our engine has in flight (concurrency 64)
PGQ_BATCH = 64


def pgqueuer_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("pgqueuer") is not None


async def run_pgqueuer(n: int, url: str) -> float:
    """N jobs enqueued, dequeued and completed; jobs/s (the schema is
    installed before the clock starts)."""
    import psycopg
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.domain.types import QueueExecutionMode

    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        queries = Queries(PsycopgDriver(conn))
        await queries.install()
        manager = QueueManager(queries)
        done = 0

        @manager.entrypoint("job")
        async def job(_: Any) -> None:
            nonlocal done
            done += 1

        # The clock stops when the last completion is written (pgqueuer
        # buffers them and writes a batch at a time), not when `run` returns:
        # its shutdown waits out a heartbeat timer, seconds that are no job's.
        logged = [0, 0.0]
        log_jobs = queries.log_jobs

        async def timed(job_status: Any) -> None:
            await log_jobs(job_status)
            logged[0] += len(job_status)
            if logged[0] >= n:
                logged[1] = logged[1] or time.perf_counter()

        queries.log_jobs = timed  # type: ignore[method-assign]
        payloads: list[bytes | None] = [f"job number {i}".encode() for i in range(n)]
        start = time.perf_counter()
        await queries.enqueue(["job"] * n, payloads, [0] * n)
        await manager.run(
            dequeue_timeout=timedelta(seconds=0.2),
            batch_size=PGQ_BATCH,
            mode=QueueExecutionMode.drain,
        )
        elapsed = logged[1] - start
        left = await queries.queue_size()
    finally:
        await conn.close()
    assert done == n, (done, n)
    assert not left, left
    return n / elapsed


@dataclass
class ServerCost:
    """Commits and server CPU of one run in the database `name` (see the
    module's text): `start()` before the run, `stop()` after its process ended."""

    pg: Any  # benchmarks/postgres.py PgDatabases
    name: str
    commits: int = 0
    cpu: float = 0.0

    def _commits(self) -> int:
        import psycopg

        with psycopg.connect(self.pg.base, autocommit=True) as conn:
            for _ in range(200):
                busy = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (self.name,)
                ).fetchone()
                if busy is None or busy[0] == 0:
                    break
                time.sleep(0.05)  # a backend of the run still exiting
            row = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (self.name,)
            ).fetchone()
        return int(row[0]) if row else 0

    def start(self) -> None:
        self.commits = self._commits()
        self.cpu = self.pg.cpu_seconds()

    def stop(self) -> tuple[int, float]:
        """(commits, server CPU seconds) since `start`."""
        commits = self._commits() - self.commits
        return commits, self.pg.cpu_seconds() - self.cpu


if __name__ == "__main__":  # a quick look: python benchmarks/_pg_anchor.py URL N
    import sys

    print(asyncio.run(run_pgqueuer(int(sys.argv[2]), sys.argv[1])))
