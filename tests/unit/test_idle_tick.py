"""An idle cron tick asks the ledger "anything due?" synchronously before it
imports asyncio, aiosqlite and the engine (issue 27; core/ledger/sqlite/idle.py).
Its answer must be the union of the claims every pass of a tick makes: a row
one claim would take and the probe missed is a job a tick never runs."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.identity import marker_path
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.sqlite.idle import nothing_due
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION
from reclaim_tui.core.models import Status
from reclaim_tui.errors import LedgerBusyError

_NOW = 1_800_000_000.0


async def _one_row(path: Path, status: Status, inflight: int, held: int, due: bool) -> None:
    ledger = await open_ledger(path, clock=ManualClock(_NOW))
    try:
        spec = json.dumps({"input": "x", "model": "m"})
        await ledger.insert_jobs([("k1", spec, "m")], "test")
    finally:
        await ledger.close()
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "UPDATE jobs SET status = ?, inflight = ?, held = ?, next_at = ?",
            (status.value, inflight, held, _NOW - 5 if due else _NOW + 5),
        )
    db.close()


async def _claimed(ledger: Ledger) -> list[str]:
    """Every row some pass of a tick claims now (each claim's own name)."""
    me, kw = str(this_process("idle-test")), {"limit": 10, "lease_seconds": 60.0}
    claims = {
        "sendable": ledger.claim_sendable,
        "pollable": ledger.claim_pollable,
        "cancel_pending": ledger.claim_cancel_pending,
        "undelivered": ledger.claim_undelivered,
        "orphans": ledger.claim_orphans,
    }
    return [name for name, claim in claims.items() if (await claim(me, **kw)).rows]


@pytest.mark.parametrize(
    ("status", "inflight", "held", "due"),
    list(itertools.product(list(Status), (0, 1), (0, 1), (False, True))),
)
async def test_the_probe_says_nothing_due_exactly_when_no_claim_takes_a_row(
    tmp_path: Path, status: Status, inflight: int, held: int, due: bool
) -> None:
    path = tmp_path / "l.db"
    await _one_row(path, status, inflight, held, due)
    idle = nothing_due(str(path), busy_timeout=1.0, now=_NOW)
    ledger = await open_ledger(path, clock=ManualClock(_NOW))
    try:
        claimed = await _claimed(ledger)
    finally:
        await ledger.close()
    assert idle == (not claimed), claimed


async def test_a_row_leased_by_another_live_process_is_looked_at_by_the_full_tick(
    tmp_path: Path,
) -> None:
    """The probe has no lease test: a leased due row says "look closer", never idle."""
    path = tmp_path / "l.db"
    await _one_row(path, Status.SUBMITTED, 0, 0, due=True)
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE jobs SET lease_owner = ?, lease_until = ?", ("x|1|y|", _NOW + 60))
    db.close()
    assert not nothing_due(str(path), busy_timeout=1.0, now=_NOW)


async def test_what_it_cannot_vouch_for_goes_to_the_full_tick(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    assert not nothing_due(str(path), busy_timeout=1.0, now=_NOW)  # no ledger yet
    path.touch()
    assert not nothing_due(str(path), busy_timeout=1.0, now=_NOW)  # empty: opening decides
    path.unlink()
    await (await open_ledger(path)).close()
    assert nothing_due(str(path), busy_timeout=1.0, now=_NOW)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")  # a migration to run
    db.close()
    assert not nothing_due(str(path), busy_timeout=1.0, now=_NOW)
    foreign = tmp_path / "other.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE jobs (x)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.close()
    assert not nothing_due(str(foreign), busy_timeout=1.0, now=_NOW)


async def test_the_idle_probe_writes_the_marker_as_opening_does(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger = await open_ledger(path)
    ledger_id = ledger.ledger_id
    await ledger.close()
    marker_path(path).unlink()
    assert nothing_due(str(path), busy_timeout=1.0, now=_NOW)
    assert marker_path(path).read_text(encoding="utf-8").strip() == ledger_id


async def test_a_locked_ledger_is_busy_after_one_wait(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    await (await open_ledger(path)).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LedgerBusyError, match="locked"):
            nothing_due(str(path), busy_timeout=0.05, now=_NOW)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _tick(db: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "reclaim_tui", "tick", "--db", str(db), "--api-key", "k"]
    args += ["--base-url", "http://127.0.0.1:9", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_an_idle_tick_says_what_the_full_one_says(tmp_path: Path) -> None:
    """The same line and JSON document (its times aside), exit 0, the marker back."""
    db = tmp_path / "l.db"
    first = _tick(db)  # a new ledger: the full tick makes it
    assert (first.returncode, first.stdout) == (0, "idle\n"), first.stderr
    marker_path(db).unlink()
    again = _tick(db)
    assert (again.returncode, again.stdout) == (0, "idle\n"), again.stderr
    assert marker_path(db).exists()
    report = json.loads(_tick(db, "--json", "--fail-on-errors").stdout)
    assert {k: v for k, v in report.items() if not k.endswith("_at")} == {
        "summary": "idle",
        "counts": {},
        "errors": [],
        "unavailable": None,
    }
    assert report["started_at"].endswith("Z") and report["finished_at"].endswith("Z")


def test_an_idle_tick_without_a_key_still_refuses_the_real_api(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    assert _tick(db).returncode == 0
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    args = [sys.executable, "-m", "reclaim_tui", "tick", "--db", str(db)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2 and "no Gemini API key" in done.stderr


def test_an_idle_tick_registers_as_the_full_one_does(tmp_path: Path) -> None:
    """The fleet's registry (issue 25) after an idle tick: a tick row, stopped,
    its pass now and "idle" — as the full tick's Beacon leaves it — and one
    row a host, not one per cron run. Without it the fleet showed a cron
    tick's last *busy* pass as its last."""
    db = tmp_path / "l.db"
    assert _tick(db).returncode == 0  # a new ledger: the full tick makes it and registers

    def ticks() -> list[tuple[object, ...]]:
        with sqlite3.connect(db) as con:
            return con.execute(
                "SELECT owner, state, passes, last_pass, last_pass_at FROM processes"
                " WHERE kind = 'tick'"
            ).fetchall()

    (full,) = ticks()
    assert full[1:4] == ("stopped", 1, "idle")
    for _ in range(2):
        done = _tick(db)
        assert (done.returncode, done.stdout) == (0, "idle\n"), done.stderr
    (idle,) = ticks()  # one row a host: the older stopped ones dropped
    assert idle[0] != full[0], "the idle tick's own row"
    assert idle[1:4] == ("stopped", 1, "idle")
    assert float(idle[4]) >= float(full[4])  # type: ignore[arg-type]
