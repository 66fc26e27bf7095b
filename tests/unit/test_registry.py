"""The process registry (issue 25, core/ledger/registry.py): each process
upserts its row at start, after a pass, on a change of state and at a clean
exit; a pass that only polled writes at most every BEAT seconds; a failed
write never fails anything; a read-only ledger is never written; rows read
as alive, stale, gone or stopped; the table bounds itself. Both engines."""

from __future__ import annotations

import asyncio
import io
import signal
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.fleet import read_fleet
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, pid_space, this_process
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.postgres.schema import PG_SCHEMA_VERSION
from reclaim_tui.core.ledger.registry import (
    BEAT,
    RETENTION,
    Beacon,
    read_processes,
    stale_after,
)
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION
from reclaim_tui.core.models import JobSpec, PassReport
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.runner.commands import SetPace
from reclaim_tui.runner.service import ServiceLoop
from tests.helpers.postgres import find_bin_dir

NOW = 1_800_000_000.0
FAR = "far-host|77|900|"  # another host: its liveness is never judged here
FIXTURES = Path(__file__).parents[1] / "fixtures" / "ledgers"


def _report(**counts: int) -> PassReport:
    return PassReport(counts=Counter(counts))


async def _rows(ledger: Ledger) -> dict[str, tuple[object, ...]]:
    rows = await ledger.select(
        "SELECT owner, kind, host, pid, state, interval_s, passes, last_pass, seen_at"
        " FROM processes"
    )
    return {r[0]: tuple(r[1:]) for r in rows}


async def test_a_process_says_who_it_is_its_passes_and_its_exit(db_url: str) -> None:
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    try:
        beacon = Beacon(ledger, FAR, "service", interval=5.0)
        await beacon.start()
        assert (await _rows(ledger))[FAR] == ("service", "far-host", 77, "up", 5.0, 0, None, NOW)
        clock.advance(1)
        await beacon.passed(_report(sent=2, consumed=1))  # did something: written at once
        row = (await _rows(ledger))[FAR]
        assert (row[5], row[6], row[7]) == (1, "sent=2 consumed=1", NOW + 1)
        clock.advance(1)
        await beacon.passed(_report(polled=3))  # only polled, 1 s after the last write
        assert (await _rows(ledger))[FAR][5] == 1, "an idle pass wrote before BEAT"
        clock.advance(BEAT)
        await beacon.passed(_report(polled=3))
        row = (await _rows(ledger))[FAR]
        assert (row[5], row[6]) == (3, "polled=3")
        await beacon.changed(state="paused", interval=60.0)
        assert (await _rows(ledger))[FAR][3:5] == ("paused", 60.0)
        await beacon.stopped()
        assert (await _rows(ledger))[FAR][3] == "stopped"
        assert beacon.failures == 0
        # A first pass is written even if it only polled: "no pass yet" would be wrong.
        quiet = Beacon(ledger, "quiet-host|1|1|", "console", interval=2.0)
        await quiet.start()
        clock.advance(1)
        await quiet.passed(_report())
        assert (await _rows(ledger))["quiet-host|1|1|"][5:7] == (1, "idle")
    finally:
        await ledger.close()


async def test_alive_stale_gone_and_stopped(db_url: str) -> None:
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    try:
        dead = str(LeaseOwner(this_process().host, 4_194_304_999, "1", pid_space()))
        for owner, kind in ((FAR, "service"), ("quiet-host|5|1|", "service"), (dead, "tick")):
            await Beacon(ledger, owner, kind, interval=5.0).start()
        stopped = Beacon(ledger, "done-host|9|1|", "tick")
        await stopped.start()
        await stopped.stopped()
        clock.advance(stale_after(5.0) + 1)
        await Beacon(ledger, FAR, "service", interval=5.0).beat()  # still writes
        found = {p.owner: p.condition for p in await read_processes(ledger, clock.now())}
        assert found == {
            FAR: "alive",
            "quiet-host|5|1|": "stale",
            dead: "gone",
            "done-host|9|1|": "stopped",
        }
        # Running ones first, then by the last word heard.
        assert [p.condition for p in await read_processes(ledger, clock.now())] == [
            "alive", "stale", "gone", "stopped"
        ]  # fmt: skip
    finally:
        await ledger.close()


async def test_the_table_bounds_itself(db_url: str) -> None:
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    try:
        await Beacon(ledger, "crashed|1|1|", "service", interval=5.0).start()  # never stopped
        for pid in (10, 11, 12):  # cron ticks of one host, each its own process
            tick = Beacon(ledger, f"cron-host|{pid}|1|", "tick")
            await tick.start()
            await tick.stopped()
            clock.advance(60)
        other = Beacon(ledger, "other-host|10|1|", "tick")
        await other.start()
        await other.stopped()
        owners = set(await _rows(ledger))
        # The latest stopped tick of each host stays; the crashed service too, for now.
        assert owners == {"crashed|1|1|", "cron-host|12|1|", "other-host|10|1|"}
        clock.advance(RETENTION + 1)
        await Beacon(ledger, "new|1|1|", "console").start()
        assert set(await _rows(ledger)) == {"new|1|1|"}
    finally:
        await ledger.close()


async def test_a_failed_write_fails_nothing_and_a_readonly_ledger_gets_none(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ledger.db"
    clock = ManualClock(NOW)
    ledger = await open_ledger(db, clock=clock)
    try:
        async with ledger.write() as session:
            await session.execute("DROP TABLE processes")  # any write error will do
        engine = Engine(ledger, FakeBackend(), DirectorySink(tmp_path / "out"))
        beacon = Beacon(ledger, engine.owner, "service", interval=0.05)
        loop = ServiceLoop(engine, out=io.StringIO(), max_sleep=0.05, beacon=beacon)
        await beacon.start()
        code = await loop.run([JobSpec(input="registry down", model="m")], once=True)
        assert code == 0 and loop.passes == 1
        # Logged, never raised; after a failure none is tried for BEAT seconds.
        assert beacon.failures == 1
        clock.advance(BEAT)
        await beacon.stopped()
        assert beacon.failures == 2
    finally:
        await ledger.close()
    fresh = tmp_path / "fresh.db"
    await (await open_ledger(fresh)).close()
    readonly = await open_ledger(fresh, readonly=True)
    try:
        beacon = Beacon(readonly, FAR, "console")
        await beacon.start()
        await beacon.passed(_report(sent=1))
        await beacon.stopped()
        assert beacon.failures == 0
    finally:
        await readonly.close()
    with sqlite3.connect(fresh) as con:
        assert con.execute("SELECT count(*) FROM processes").fetchone()[0] == 0


async def test_a_service_loop_registers_its_passes_pause_and_drain(
    tmp_path: Path, db_url: str
) -> None:
    ledger = await open_ledger(db_url)
    try:
        engine = Engine(
            ledger,
            FakeBackend(),
            DirectorySink(tmp_path / "out"),
            config=EngineConfig(first_poll=0),
        )
        beacon = Beacon(ledger, engine.owner, "service", interval=0.05)
        loop = ServiceLoop(engine, out=io.StringIO(), min_sleep=0.01, max_sleep=0.05, beacon=beacon)
        await beacon.start()
        jobs = [JobSpec(input=f"registered {n}", model="m") for n in range(3)]
        task = asyncio.create_task(loop.run(jobs))

        async def row() -> tuple[object, ...]:
            return (await _rows(ledger))[engine.owner]

        async with asyncio.timeout(60):
            while (await ledger.counts()).get("consumed", (0, None))[0] < 3:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
            loop.set_pace(SetPace(paused=True, interval=2.0))
            while (await row())[3] != "paused":  # noqa: ASYNC110 — another task's writes
                await asyncio.sleep(0.02)
        kind, _, _, state, interval, passes, last, _ = await row()
        assert (kind, state, interval) == ("service", "paused", 2.0)
        assert isinstance(passes, int) and passes >= 1 and last
        loop.signal(signal.SIGTERM)
        assert await asyncio.wait_for(task, 60) == 0
        assert (await row())[3] == "stopped"
        fleet = await read_fleet(ledger, ledger.clock.now())
        [me] = [p for p in fleet.processes if p.owner == engine.owner]
        assert me.condition == "stopped" and me.passes == passes
    finally:
        await ledger.close()


# -- a ledger the previous code made --------------------------------------------------
def _restore(dump: Path, db_url: str) -> None:
    if db_url.startswith("postgresql"):
        subprocess.run(
            [str(find_bin_dir() / "psql"), "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), db_url],
            check=True,
            capture_output=True,
        )
        return
    with sqlite3.connect(db_url) as con:
        con.executescript(dump.read_text())


async def test_a_ledger_made_before_the_registry_gets_it(db_url: str) -> None:
    """The dumps are ledgers made by 40b057a's own code (fixtures/ledgers/make.py)."""
    postgres = db_url.startswith("postgresql")
    dump = FIXTURES / ("postgres-v2-40b057a.sql" if postgres else "sqlite-v7-40b057a.sql")
    _restore(dump, db_url)
    clock = ManualClock(NOW)
    ledger = await open_ledger(db_url, clock=clock)
    try:
        assert await ledger.schema_version() == (PG_SCHEMA_VERSION if postgres else SCHEMA_VERSION)
        # The registry's own migration (PostgreSQL 3, SQLite 8) is among those applied.
        assert await ledger.schema_version() >= (3 if postgres else 8)
        beacon = Beacon(ledger, FAR, "tick")
        await beacon.start()
        beacon.record(_report(consumed=5))
        await beacon.stopped()
        fleet = await read_fleet(ledger, NOW)
        [tick] = fleet.processes
        assert (tick.kind, tick.host, tick.condition, tick.last_pass) == (
            "tick", "far-host", "stopped", "consumed=5"
        )  # fmt: skip
        assert len([r async for r in ledger.iter_rows()]) == 5  # the old rows kept
    finally:
        await ledger.close()
