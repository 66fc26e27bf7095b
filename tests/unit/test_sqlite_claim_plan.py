"""A claim on SQLite takes the rows it picked by their integer id: the
outer `UPDATE` finds each row by the table's own key, not through the key's
index first (`idem IN (SELECT idem …)` cost one more index search and a
list of text keys a claimed row). Read from the statement's query plan."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.claim_writes import claim_statement, pollable, sendable
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec

NOW = 1_800_000_000.0
ME = "host-a|100|me"
BY_ID = "SEARCH jobs USING INTEGER PRIMARY KEY (rowid=?)"


def _top_plan(path: Path, sql: str, args: list[object]) -> list[str]:
    """The claim's plan: the outer statement's own steps (not its subquery's)."""
    db = sqlite3.connect(path)
    try:
        db.create_function("reclaim_holder_dead", 1, lambda owner: False)
        rows = db.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
    finally:
        db.close()
    return [detail for _, parent, _, detail in rows if parent == 0]


async def test_every_claim_takes_its_rows_by_id(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = await open_ledger(path, clock=ManualClock(NOW))
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        await ledger.insert_jobs([(f"k{n:04d}", spec, "m") for n in range(50)], "test")
        claims = {
            "send": sendable(NOW, None),
            "send among keys": sendable(NOW, ["k0001", "k0002"]),
            "poll": pollable(NOW, ()),
            "poll excluding": pollable(NOW, ["k0003"]),
        }
        plans = {}
        for name, (where, params) in claims.items():
            sql, args = await claim_statement(ledger, ME, where, params, 64, 60.0)  # type: ignore[arg-type]
            plans[name] = _top_plan(path, sql, args)
    finally:
        await ledger.close()
    for name, plan in plans.items():
        assert BY_ID in plan, (name, plan)
        assert not any("sqlite_autoindex_jobs_1" in step for step in plan), (name, plan)
