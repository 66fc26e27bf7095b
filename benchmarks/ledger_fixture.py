"""A big synthetic ledger for console benchmarks, written in one bulk transaction.

The rows go into a ledger of schema 4, which the ledger then migrates: the
text index (migration 5) is built in one pass, ~20 s at 1M rows, where its
triggers, row by row in one transaction, took ~8 minutes.

The mix is what a long-lived ledger looks like: mostly consumed, a few percent
failed/cancelled, and some rows still active. Synthetic active rows are due
in a year (and orphans are held), so a console's reclaim loop leaves them
alone and only the real in-flight jobs of the benchmark cost API calls.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import time
from pathlib import Path

from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS, migration_statements

#: The schema the rows are written in, before the ledger's own migrations.
_BULK_SCHEMA = 4

__all__ = ["MIX", "build_ledger"]

MIX = (
    ("consumed", 0.92),
    ("failed", 0.02),
    ("cancelled", 0.01),
    ("done", 0.01),
    ("submitted", 0.03),
    ("reserving", 0.01),
)
MODELS = ("gemini-flash-latest", "gemini-pro-latest")
_INSERT = (
    "INSERT INTO jobs(idem, spec, model, status, handle, attempts, polls, inflight, held,"
    " lease_until, next_at, last_error, created_at, state_since, submitted_at, done_at,"
    " consumed_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,0,?,?,?,?,?,?,?,?)"
)


def _rows(count: int, now: float, seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    statuses = [s for s, _ in MIX]
    weights = [w for _, w in MIX]
    far = now + 365 * 86400
    for n in range(count):
        status = rng.choices(statuses, weights)[0]
        idem = f"{rng.getrandbits(128):032x}"
        model = MODELS[n % 2]
        spec = json.dumps(
            {"input": f"Summarise report #{n} for region {n % 97}", "model": model},
            sort_keys=True,
            separators=(",", ":"),
        )
        created = now - rng.uniform(60, 30 * 86400)
        since = created + rng.uniform(0, 600)
        handle = f"syn-{n:08d}" if status != "reserving" else None
        error = None
        if status == "failed":
            error = rng.choice(("API status failed: model error", "create failed (5 attempts)"))
        inflight = held = 1 if status == "reserving" else 0
        active = status in ("reserving", "submitted", "done")
        yield (
            idem,
            spec,
            model,
            status,
            handle,
            1,
            3,
            inflight,
            held,
            far if active else since,
            error,
            created,
            since,
            created + 1 if handle else None,
            since if status in ("done", "consumed") else None,
            since if status == "consumed" else None,
            since,
        )


def build_ledger(path: Path, count: int, seed: int = 1) -> float:
    """Create a ledger at `path` with `count` synthetic rows; returns seconds taken."""
    started = time.perf_counter()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = OFF")
    db.execute("BEGIN IMMEDIATE")
    for migration in MIGRATIONS[:_BULK_SCHEMA]:
        for statement in migration_statements(migration):
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {_BULK_SCHEMA}")
    now = time.time()
    db.executemany(_INSERT, _rows(count, now, seed))
    db.execute(
        "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
        " SELECT created_at, id, idem, 'bench', NULL, status, 'synthetic' FROM jobs"
    )
    db.execute("COMMIT")
    db.close()

    async def migrate() -> None:
        await (await open_ledger(path)).close()

    asyncio.run(migrate())
    return time.perf_counter() - started
