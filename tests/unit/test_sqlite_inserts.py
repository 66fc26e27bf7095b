"""New rows' "reserved" events on SQLite in one statement (issue 39, item 2).

`insert_jobs` writes every new row's event with ONE `INSERT … SELECT` over
the ids the inserts took (not a statement per row looking its key up), for
10 rows as for 300; each new key gets exactly one event, in the order the
rows went in, and a key already there or given twice gets none extra. A
ledger whose ids reached SQLite's largest rowid (new ids then come at
random) still gets one event per new row, the right one.
"""

from __future__ import annotations

import json
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger

SPEC = json.dumps({"input": "x", "model": "m"})


async def _reserved_events(ledger: SqliteLedger) -> list[tuple[str, str, str | None, str, str]]:
    async with ledger.connection.execute(
        "SELECT e.idem, j.idem, e.from_status, e.to_status, e.note"
        " FROM events AS e JOIN jobs AS j ON j.id = e.job ORDER BY e.id"
    ) as cur:
        return [tuple(r) for r in await cur.fetchall()]  # type: ignore[misc]


async def test_new_rows_events_take_one_statement_for_any_batch(tmp_path: Path) -> None:
    ledger = await open_ledger(tmp_path / "ledger.db", clock=ManualClock())
    assert isinstance(ledger, SqliteLedger)
    statements: list[str] = []
    await ledger.connection.set_trace_callback(statements.append)
    try:
        per_batch = []
        for prefix, size in (("a", 10), ("b", 300)):
            statements.clear()
            keys = [f"{prefix}{i:04d}" for i in range(size)]
            inserted, present = await ledger.insert_jobs([(k, SPEC, "m") for k in keys], "test")
            assert inserted == keys and present == []
            per_batch.append(sum(s.startswith("INSERT INTO events") for s in statements))
    finally:
        await ledger.connection.set_trace_callback(None)
        await ledger.close()
    assert per_batch == [1, 1]


async def test_each_new_row_gets_one_reserved_event_in_order(tmp_path: Path) -> None:
    ledger = await open_ledger(tmp_path / "ledger.db", clock=ManualClock())
    assert isinstance(ledger, SqliteLedger)
    try:
        await ledger.insert_jobs([("k1", SPEC, "m"), ("k2", SPEC, "m")], "first")
        # k2 exists, k4 is given twice: three new rows, k2 untouched.
        jobs = [("k3", SPEC, "m"), ("k2", SPEC, "m"), ("k4", SPEC, "m"), ("k4", SPEC, "m")]
        jobs.append(("k0", SPEC, "m"))
        inserted, present = await ledger.insert_jobs(jobs, "second")
        assert inserted == ["k3", "k4", "k0"] and present == ["k2"]
        got = await _reserved_events(ledger)
        order = ("k1", "k2", "k3", "k4", "k0")
        assert got == [(k, k, None, "reserving", "reserved") for k in order]
        assert [e.actor for e in await ledger.events("k0")] == ["second"]
        assert [e.actor for e in await ledger.events("k2")] == ["first"]
    finally:
        await ledger.close()


async def test_ids_past_the_largest_rowid_still_get_their_events(tmp_path: Path) -> None:
    ledger = await open_ledger(tmp_path / "ledger.db", clock=ManualClock())
    assert isinstance(ledger, SqliteLedger)
    try:
        await ledger.insert_jobs([("low", SPEC, "m")], "test")
        async with ledger.write() as db:  # a row at the top: the next ids are random
            await db.execute(
                "INSERT INTO jobs(id, idem, spec, model, status, created_at, state_since,"
                " updated_at) VALUES (?, 'top', ?, 'm', 'done', 0, 0, 0)",
                (2**63 - 1, SPEC),
            )
        keys = [f"r{i}" for i in range(20)]
        inserted, _ = await ledger.insert_jobs([(k, SPEC, "m") for k in keys], "test")
        assert inserted == keys
        got = await _reserved_events(ledger)
        assert got == [(k, k, None, "reserving", "reserved") for k in ["low", *keys]]
    finally:
        await ledger.close()
