"""Other processes' live leases on SQLite (`dead_holders`, asked at every
claim) are found by a skip over the lease owner's index, one probe per
owner (core/ledger/base.py), not by reading every leased row: a large submit
leased by the asking process made each claim read all of its reserved rows
again. Counted in SQLite's virtual machine steps (a progress handler called
at every step) while `dead_holders` runs: the same with twice the rows
leased, and far fewer than the rows. And the same owners as the statement
that read every row, case by case."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.base import LIVE_LEASES_SQL
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.owner import LeaseOwner, pid_space
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.models import JobSpec

NOW = 1_800_000_000.0
ME = "host-a|100|me"
DEAD = str(LeaseOwner(socket.gethostname(), 4_194_304_999, "1", pid_space()))

# What reading every leased row answers: the rule the probe keeps.
_EVERY_ROW = (
    "SELECT DISTINCT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
    " AND lease_until > ? AND lease_owner != ?"
)

# (owner, lease_until) of the rows after ME's, which are live.
_OTHERS = [
    ("host-b|1|live", NOW + 60),
    ("host-c|2|expired", NOW - 1),
    ("host-d|3|one-of-two", NOW - 5),
    ("host-d|3|one-of-two", NOW + 5),
    ("host-0|4|before-me", NOW + 1),
    ("host-z|5|after-me", NOW + 1),
    ("host-e|6|ends-now", NOW),
    (DEAD, NOW + 60),
]


async def _steps(path: Path, mine: int) -> tuple[list[str], int, set[str]]:
    """(dead_holders(ME), the steps it took, the owners it found live) on a
    ledger where ME leases `mine` rows and _OTHERS the rest."""
    ledger = await open_ledger(str(path), clock=ManualClock(NOW))
    assert isinstance(ledger, SqliteLedger)
    try:
        spec = JobSpec(input="a job", model="m").to_json()
        keys = [f"key-{i:05}" for i in range(mine + len(_OTHERS))]
        await ledger.insert_jobs([(key, spec, "m") for key in keys], "test")
        async with ledger.write() as db:
            await db.execute(
                "UPDATE jobs SET lease_owner = ?, lease_until = ? WHERE id <= ?",
                (ME, NOW + 30, mine),
            )
            for n, (owner, until) in enumerate(_OTHERS):
                await db.execute(
                    "UPDATE jobs SET lease_owner = ?, lease_until = ? WHERE id = ?",
                    (owner, until, mine + 1 + n),
                )
        steps = 0

        def step() -> int:
            nonlocal steps
            steps += 1
            return 0

        await ledger.connection.set_progress_handler(step, 1)
        dead = await ledger.dead_holders(ME)
        await ledger.connection.set_progress_handler(None, 1)
    finally:
        await ledger.close()
    with sqlite3.connect(path) as conn:
        live = {r[0] for r in conn.execute(_EVERY_ROW, (NOW, ME))}
    return dead, steps, live


async def test_live_holders_are_probed_per_owner_with_the_every_row_answer(
    tmp_path: Path,
) -> None:
    dead, few, live = await _steps(tmp_path / "few.sqlite", 2000)
    again, more, _ = await _steps(tmp_path / "more.sqlite", 4000)
    assert dead == again == [DEAD]
    assert live == {"host-b|1|live", "host-d|3|one-of-two", "host-0|4|before-me",
                    "host-z|5|after-me", DEAD}  # fmt: skip
    # A probe or two per distinct owner (9 with ME): the same steps however
    # many rows ME holds, and fewer than its rows. Reading every leased row
    # takes several steps per row.
    assert few == more, f"finding the live holders took {few} then {more} steps"
    assert few < 1000, f"finding the live holders took {few} steps"


async def test_every_asker_gets_the_owners_live_but_itself(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    await _steps(path, 50)
    ledger = await open_ledger(str(path), clock=ManualClock(NOW))
    try:
        for asker in ("host-b|1|live", "host-d|3|one-of-two", "nobody", ME, DEAD):
            with sqlite3.connect(path) as conn:
                want = {r[0] for r in conn.execute(_EVERY_ROW, (NOW, asker))}
                found = {r[0] for r in conn.execute(LIVE_LEASES_SQL, (asker, NOW))}
            assert found == want, asker
            assert await ledger.dead_holders(asker) == sorted({DEAD} & want), asker
    finally:
        await ledger.close()
