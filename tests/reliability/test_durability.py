"""Durability settings and locking discipline of the ledger.

Every connection runs WAL with synchronous=FULL; a statement trace of whole
ticks (plus orphan recovery, sink failure, replay and operator actions) shows
no INSERT/UPDATE/DELETE outside `BEGIN IMMEDIATE … COMMIT`; a write cancelled
while it waits for the lock must not leave the connection inside a
transaction.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.sinks import CallableSink, DirectorySink
from reclaim_tui.errors import MaybeCreatedError
from tests.helpers import EmulatorProcess, Workspace, record_figures
from tests.helpers.procs import write_jobs

_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.I)
_USER_VERSION_SET = re.compile(r"^\s*PRAGMA\s+user_version\s*=", re.I)


class TracedLedger(SqliteLedger):
    """A Ledger whose connection reports every statement from the first one."""

    statements: ClassVar[list[str]] = []

    async def _configure(self) -> None:
        # After the read-only inspection of the file (reads only), before any
        # pragma that writes.
        await self.connection.set_trace_callback(TracedLedger.statements.append)
        await super()._configure()


def writes_outside_transactions(statements: list[str]) -> tuple[list[str], int, int]:
    """(offending statements, transactions seen, writes seen)."""
    in_txn = False
    bad: list[str] = []
    transactions = writes = 0
    for raw in statements:
        sql = raw.strip()
        head = sql.upper()
        if head.startswith("BEGIN"):
            if head != "BEGIN IMMEDIATE" or in_txn:
                bad.append(f"{sql} (nested or not IMMEDIATE)")
            in_txn = True
            transactions += 1
        elif head in ("COMMIT", "ROLLBACK"):
            in_txn = False
        elif _WRITE.match(sql) or _USER_VERSION_SET.match(sql):
            writes += 1
            if not in_txn:
                bad.append(sql)
    return bad, transactions, writes


async def test_every_connection_is_wal_and_synchronous_full(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    seen = []
    for options in ({}, {"busy_timeout": 1.5}, {"readonly": True}, {"create": False}):
        ledger = await open_ledger(path, **options)  # type: ignore[arg-type]
        try:
            pragmas = await ledger.pragmas()
        finally:
            await ledger.close()
        assert pragmas["journal_mode"] == "wal", (options, pragmas)
        assert pragmas["synchronous"] == 2, (options, pragmas)  # 2 = FULL
        assert pragmas["foreign_keys"] == 1
        assert pragmas["busy_timeout"] == int(options.get("busy_timeout", 10.0) * 1000)
        seen.append(pragmas)
    # The file itself is in WAL mode (header bytes 18-19 = 2), so a plain
    # sqlite3 reader or another process sees it that way too.
    header = path.read_bytes()[:20]
    assert header[18] == header[19] == 2
    record_figures("pragmas", connections_checked=len(seen), journal_mode="wal", synchronous=2)


def test_a_cli_tick_leaves_a_wal_ledger(tmp_path: Path) -> None:
    with EmulatorProcess(tmp_path) as emu:
        ws = Workspace(tmp_path / "ws", emulator=emu)
        proc = ws.tick(jobs=write_jobs(ws.root / "j.jsonl", [{"input": "wal please"}]))
        assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(ws.db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


async def test_no_write_outside_begin_immediate(tmp_path: Path) -> None:
    TracedLedger.statements.clear()
    clock = ManualClock()
    ledger = await TracedLedger.open(tmp_path / "ledger.db", clock=clock)
    fake = FakeBackend(clock=clock, latency=0.0, supports_lookup=False)
    sink_fails = {"on": False}
    directory = DirectorySink(tmp_path / "out")

    async def flaky(idem: str, result: Any) -> None:
        if sink_fails["on"]:
            raise OSError("disk full (injected)")
        await directory.deliver(idem, result)

    engine = Engine(
        ledger, fake, CallableSink(flaky), config=EngineConfig(lease_seconds=30), owner="tr|1|a"
    )
    try:
        specs = [JobSpec(input=f"traced {i}", model="m") for i in range(6)]
        keys = [idempotency_key(s) for s in specs]
        # One create lost after acceptance (an orphan), one refused for good.
        fake.create_faults = [
            (MaybeCreatedError("lost answer", 503), True),
            None,
            None,
            None,
            None,
        ]
        await engine.tick(specs[:5])
        clock.advance(3)
        sink_fails["on"] = True
        await engine.tick()  # completes, sink fails: rows stay done
        sink_fails["on"] = False
        clock.advance(10)
        await engine.tick()  # orphan resubmitted, replay consumes
        clock.advance(3)
        fake.latency = None  # still running when the operator cancels it
        await engine.tick([specs[5]])
        await engine.operator.cancel(keys[5], actor=Actor.CLI)
        fake.latency = 0.0
        await engine.operator.retry(keys[5], actor=Actor.CLI)
        clock.advance(3)
        await engine.tick()
        clock.advance(3)
        await engine.tick()
        rows = {k: await ledger.get(k) for k in keys}
        assert all(r is not None and r.status == Status.CONSUMED for r in rows.values()), rows
    finally:
        await ledger.close()
    bad, transactions, writes = writes_outside_transactions(TracedLedger.statements)
    assert writes > 50 and transactions > 10
    assert bad == [], bad[:5]
    record_figures(
        "trace",
        statements=len(TracedLedger.statements),
        write_statements=writes,
        transactions=transactions,
        writes_outside_begin_immediate=len(bad),
    )


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_no_transaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.db"
    ledger = await open_ledger(path, busy_timeout=5)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
    try:
        await ledger.insert_jobs([("k1", '{"input":"x","model":"m"}', "m")], "test")
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        began = threading.Event()
        await ledger.connection.set_trace_callback(
            lambda sql: began.set() if sql.startswith("BEGIN") else None
        )
        heartbeat = asyncio.create_task(ledger.renew("me", ["k1"], 10))
        # renew's BEGIN IMMEDIATE reached SQLite: it waits there for the lock.
        assert await asyncio.to_thread(began.wait, 30)
        heartbeat.cancel()  # what Engine._holding does when the batch is done
        with pytest.raises(asyncio.CancelledError):
            await heartbeat
        other.execute("COMMIT")
        # aiosqlite runs its calls in order on one thread: once this one has run, so
        # has the cancelled BEGIN (and whatever the ledger queued behind it).
        await ledger.connection.execute("SELECT 1")
        stuck = ledger.connection.in_transaction
        if stuck:
            await ledger.connection.execute("ROLLBACK")  # so the test can clean up
        assert not stuck, "the connection was left inside a transaction holding the write lock"
        await ledger.add_event("k1", "test", "written after the cancel", "reserving")
    finally:
        other.close()
        await ledger.close()
