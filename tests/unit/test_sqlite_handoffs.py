"""Each call to SQLite's connection thread (aiosqlite) costs the event loop a
hand-off and a wake-up; a claim reads what its statement returns in one such
call, not three (execute, fetch, close), and finds the holders provably gone
inside that statement, not by a read of its own before it (issue 39, item
2). A whole hot transaction — BEGIN, its statements, COMMIT — is ONE such
call (issue 39, fourth pass): a claim, a group commit, and a group commit
that takes the next batch. Counted: the calls each makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import Actor, JobSpec, Status, Transition
from tests.helpers.thread_calls import count_thread_calls

NOW = 1_800_000_000.0
ME = "host-a|100|me"


async def test_a_hot_transaction_is_one_call_to_the_connection_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = await open_ledger(tmp_path / "l.db", clock=ManualClock(NOW))
    assert isinstance(ledger, SqliteLedger)
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        await ledger.insert_jobs([(f"k{n}", spec, "m") for n in range(20)], "test")
        conn = ledger.connection
        calls = count_thread_calls(conn, monkeypatch)
        claim = await ledger.claim_sendable(ME, limit=10, lease_seconds=60)
        assert len(claim.rows) == 10
        # BEGIN, the claim (other holders probed inside it), COMMIT: one call.
        assert sum(calls.values()) == 1, calls
        calls.clear()
        keys = [r.idem for r in claim.rows]
        _, _, again = await ledger.write_and_claim_sendable(
            ME, Actor.TICK, sending=keys, limit=10, lease_seconds=60
        )
        assert len(again.rows) == 10
        # … and a group commit's writes before its claim (the rows marked,
        # their events) in the same one.
        assert sum(calls.values()) == 1, calls
        calls.clear()
        done = [
            Transition(k, Status.RESERVING, Status.SUBMITTED, "created", {"handle": k})
            for k in keys
        ]
        marked, applied = await ledger.write_batch(
            ME, Actor.TICK, sending=[r.idem for r in again.rows], transitions=done
        )
        assert sorted(applied) == sorted(keys) and len(marked) == 10
        # a group commit alone: the marks, the moves, their events, one call.
        assert sum(calls.values()) == 1, calls
    finally:
        await ledger.close()
