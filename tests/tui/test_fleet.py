"""The fleet (issue 25): lease holders and recent writers, on both engines;
`:fleet` in the console, with every registered process; a row's lease
holder in its detail; a read-only console registers nothing."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from contextlib import closing

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.fleet import read_fleet
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.registry import Beacon, stale_after
from reclaim_tui.core.ledger.schema import EVENT_SQL
from reclaim_tui.core.models import PassReport
from reclaim_tui.tui.screens.fleet import FleetScreen
from reclaim_tui.tui.widgets.detail_pane import DetailPane

from .conftest import SEED_OWNER, Seeded
from .pilot_helpers import SIZE, press, select, settle, until

NOW = 1_800_000_000.0
#: This host's name in owner strings (RECLAIM_OWNER_HOST may say another).
HERE = this_process().host


async def test_holders_and_writers_on_both_engines(db_url: str) -> None:
    ledger = await open_ledger(db_url, clock=ManualClock(NOW))
    try:
        spec = json.dumps({"input": "x", "model": "m"})
        await ledger.insert_jobs([(f"k{n}", spec, "m") for n in range(5)], "test")
        async with ledger.write() as db:
            await db.execute(
                Sql(
                    lambda d: (
                        f"UPDATE jobs SET lease_owner = {d.p}, lease_until = {d.p} WHERE idem IN"
                        " ('k0', 'k1')"
                    )
                ),
                ("host-a|41|900|", NOW + 30),
            )
            await db.execute(
                Sql(
                    lambda d: (
                        f"UPDATE jobs SET lease_owner = {d.p}, lease_until = {d.p} WHERE idem ="
                        " 'k2'"
                    )
                ),
                ("host-b|7|100|", NOW - 60),
            )
            await db.execute(EVENT_SQL, (NOW - 10, "k0", "service", None, "reserving", "n", "k0"))
            await db.execute(EVENT_SQL, (NOW - 7200, "k1", "tick", None, "reserving", "old", "k1"))
        fleet = await read_fleet(ledger, NOW)
    finally:
        await ledger.close()
    [a, b] = fleet.holders
    assert (a.host, a.pid, a.held, a.lapsed, a.until) == ("host-a", 41, 2, 0, NOW + 30)
    assert (b.host, b.pid, b.held, b.lapsed) == ("host-b", 7, 0, 1)
    actors = {w.actor: w.events for w in fleet.writers}
    assert actors.get("service") == 1 and "tick" not in actors  # an hour back only


async def test_fleet_command_and_the_rows_holder(seeded: Seeded) -> None:
    now = seeded.clock.now()
    with closing(sqlite3.connect(seeded.db)) as db, db:  # another process works on a row
        db.execute(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET lease_owner = {d.p}, lease_until = {d.p} WHERE idem = {d.p}"
                )
            ),
            (SEED_OWNER, now + 60, seeded.keys["submitted"]),
        )
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"fleet", "enter")
        assert await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        body = app.screen.query_one("#fleet")
        assert await until(pilot, lambda: "seed-host" in str(body.render()))
        assert "holds 1" in str(body.render())
        assert "tick" in str(body.render())  # the seed's engine wrote as tick
        await press(pilot, "escape")
        pane = app.main.query_one(DetailPane)
        await select(pilot, seeded.keys["submitted"])
        assert await until(pilot, lambda: "seed-host pid 1" in pane._text)


def _processes(db: object) -> dict[str, tuple[str, str]]:
    with closing(sqlite3.connect(str(db))) as con:
        rows = con.execute("SELECT host, kind, state FROM processes").fetchall()
    return {host: (kind, state) for host, kind, state in rows}


async def test_the_fleet_shows_every_registered_process(seeded: Seeded) -> None:
    """A tick on another host (stopped, its last pass), a service nobody heard
    from for too long (stale), and this console's own engine (paused, as the
    console opens here) — each with its host, kind, state and last pass."""
    ledger = await open_ledger(seeded.db, clock=seeded.clock)
    try:
        stale = Beacon(ledger, "old-host|12|1|", "service", interval=5.0)
        await stale.start()
        seeded.clock.advance(stale_after(5.0) + 60)
        tick = Beacon(ledger, "far-host|77|1|", "tick")
        await tick.start()
        tick.record(PassReport(counts=Counter(sent=3, consumed=2)))
        await tick.stopped()
    finally:
        await ledger.close()
    app = seeded.app()  # paused: its loop only says so
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await until(pilot, lambda: _processes(seeded.db).get(HERE))
        await press(pilot, "colon", *"fleet", "enter")
        assert await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        body = app.screen.query_one("#fleet")
        assert await until(pilot, lambda: "far-host" in str(body.render()))
        text = str(body.render())
        lines = text.splitlines()

        def line(host: str) -> str:
            at = next(i for i, x in enumerate(lines) if host in x)
            return lines[at] + "\n" + lines[at + 1]

        assert "tick" in line("far-host") and "stopped" in line("far-host")
        assert "last pass 0s ago: sent=3 consumed=2" in line("far-host")
        assert "service" in line("old-host") and "stale" in line("old-host")
        assert "no word for" in line("old-host")
        mine = line(HERE)
        assert "console" in mine and "paused" in mine and "every 3600s" in mine, mine
        assert "none: no row names a lease owner" in text.split("Lease holders")[1]
    # Its engine closed cleanly with the console: stopped.
    assert _processes(seeded.db)[HERE] == ("console", "stopped")


async def test_a_readonly_console_registers_nothing(seeded: Seeded) -> None:
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "colon", *"fleet", "enter")
        assert await until(pilot, lambda: isinstance(app.screen, FleetScreen))
        body = app.screen.query_one("#fleet")
        assert await until(pilot, lambda: "none registered yet" in str(body.render()))
    assert _processes(seeded.db) == {}
