"""The fleet: which processes hold leases on the ledger or wrote
to it recently — services, ticks, consoles, inboxes, on one host or (on
PostgreSQL) several.

    holders   every lease owner named on a row (SQLite: jobs_leased, a
              partial index, reads only rows with an owner; PostgreSQL
              has no index on the owner and reads every row), with the rows it
              holds now, the rows whose lease it let run out, its latest
              lease and whether it is provably alive (core/ledger/owner.py)
    writers   the actors of the last events (the newest EVENTS_READ at
              most, within `window` seconds), with counts and last write
    processes every process the registry knows (core/ledger/registry.py):
              its kind, host, state and last pass, alive, stale, gone or
              stopped; its leases are the holder of the same owner string
              (its lanes' leases, core/engine/lanes.py, counted with them)

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive, lanes_process
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.registry import Process, read_processes

__all__ = ["EVENTS_READ", "Fleet", "Holder", "Process", "Writer", "read_fleet"]

#: The newest events read for "who wrote recently" (an index range on id).
EVENTS_READ = 20_000


@dataclass(frozen=True, slots=True)
class Holder:
    owner: str
    host: str
    pid: int | None
    held: int  # rows whose lease runs now
    lapsed: int  # rows it last held, the lease run out
    until: float  # its latest lease's end
    alive: bool | None


@dataclass(frozen=True, slots=True)
class Writer:
    actor: str
    events: int
    last: float


@dataclass(frozen=True, slots=True)
class Fleet:
    holders: list[Holder]
    writers: list[Writer]
    processes: list[Process] = field(default_factory=list)

    def holder(self, owner: str) -> Holder | None:
        """The lease holder of that owner string, if it holds or held a row."""
        return next((h for h in self.holders if h.owner == owner), None)


async def read_fleet(ledger: Ledger, now: float, window: float = 3600.0) -> Fleet:
    """The lease holders, the recent writers and the registered processes of
    `ledger` at `now`."""
    rows = await ledger.select(
        Sql(
            lambda d: (
                "SELECT lease_owner,"
                f" SUM(CASE WHEN lease_until > {d.p} THEN 1 ELSE 0 END), COUNT(*), MAX(lease_until)"
                " FROM jobs WHERE lease_owner IS NOT NULL GROUP BY lease_owner"
            )
        ),
        [now],
    )
    # A process's lanes (core/engine/lanes.py) hold their rows as owners of
    # their own: counted here as the process's.
    by_process: dict[str, list[int | float]] = {}
    for owner, held, total, until in rows:
        counts = by_process.setdefault(lanes_process(owner), [0, 0, 0.0])
        counts[0] += int(held)
        counts[1] += int(total) - int(held)
        counts[2] = max(counts[2], float(until))
    holders = []
    for owner, (held, lapsed, until) in by_process.items():
        parsed = LeaseOwner.parse(owner)
        holders.append(
            Holder(
                owner,
                parsed.host if parsed else owner,
                parsed.pid if parsed else None,
                int(held),
                int(lapsed),
                float(until),
                holder_alive(owner),
            )
        )
    holders.sort(key=lambda h: (-h.held, -h.until, h.owner))
    recent = await ledger.select(
        Sql(
            lambda d: (
                "SELECT actor, COUNT(*), MAX(at) FROM events"
                f" WHERE id > (SELECT COALESCE(MAX(id), 0) FROM events) - {d.p} AND at > {d.p}"
                " GROUP BY actor"
            )
        ),
        [EVENTS_READ, now - window],
    )
    writers = sorted(
        (Writer(actor, int(count), float(last)) for actor, count, last in recent),
        key=lambda w: -w.last,
    )
    return Fleet(holders, writers, await read_processes(ledger, now))
