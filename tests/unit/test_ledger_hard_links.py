"""A SQLite ledger file with two names (a hard link, `cp -al`).

SQLite names a ledger's WAL and shared memory after the name a process
opened, so a service writing `l.db` and a tick writing `h.db` (the same
file) each kept a WAL of their own with no lock between them: the tick sent
the jobs the service had already sent (paid twice), and its rows were lost
at the service's checkpoint. A ledger file with more than one name is now
refused for writing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite import idle
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import LedgerError

NOW = 1_800_000_000.0
SPEC = JobSpec(input="a job", model="m").to_json()


async def test_a_ledger_file_with_two_names_is_refused_under_either(tmp_path: Path) -> None:
    db, other = tmp_path / "l.db", tmp_path / "h.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    await ledger.insert_jobs([("k1", SPEC, "m")], "test")
    await ledger.close()
    os.link(db, other)
    for name in (other, db):
        with pytest.raises(LedgerError, match="2 names"):
            await open_ledger(name, clock=ManualClock(NOW))
    # reading is harmless: a reader writes no WAL of its own
    reader = await open_ledger(other, clock=ManualClock(NOW), readonly=True, create=False)
    assert (await reader.counts())["reserving"][0] == 1
    await reader.close()
    other.unlink()  # one name again: the ledger opens
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    assert (await ledger.counts())["reserving"][0] == 1
    await ledger.close()


async def test_the_idle_tick_leaves_a_ledger_with_two_names_to_the_full_tick(
    tmp_path: Path,
) -> None:
    """The idle tick's quick look writes (its registry row, the marker) on a
    connection of its own: on the second name it wrote through a WAL of its
    own and said "idle", past the refusal."""
    db, other = tmp_path / "l.db", tmp_path / "h.db"
    ledger = await open_ledger(db, clock=ManualClock(NOW))  # nothing due: idle
    await ledger.close()
    assert idle.nothing_due(str(db), busy_timeout=5.0, now=NOW)
    os.link(db, other)
    assert not idle.nothing_due(str(other), busy_timeout=5.0, now=NOW)
    assert not Path(f"{other}.ledger-id").exists()  # nothing written under it
