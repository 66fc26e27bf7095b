"""The process registry: every process that works on the ledger
keeps one row in `processes` (SQLite migration 8, PostgreSQL 3) saying who
it is, its state and its last pass, so the fleet (core/ledger/fleet.py) shows
each of them — a service on another host, a cron tick, another console, an
inbox — and not only the service a console is attached to.

    owner         its lease owner string (core/ledger/owner.py): the key, and
                  what ties the row to the leases the process holds
    kind          service (`run`), run (`run --once`), tick, console (a
                  console's engine), inbox
    state         up, paused, draining, stopped (a clean exit)
    interval_s    how often it passes (a service's longest sleep, a
                  console's interval; an inbox says it is alive this often)
    last_pass     the last pass's counts (PassReport.summary()), its time, passes

When a process writes (`Beacon`): at start, after each pass, on a change of
state or interval, and `stopped` at a clean exit — one upsert, a small
transaction of its own. A pass that only polled writes only when BEAT
seconds passed since the last write, so an idle service does not sync the
ledger's disk every few seconds. A registry write that fails is logged,
never raised: the registry never fails a pass; none is tried for BEAT
seconds after it (a locked ledger costs a pass one busy_timeout, not
more). A read-only ledger is never written (a `--readonly` console
registers nothing).

Rows of dead processes: read as `gone` when the process is provably dead on
this host (`holder_alive`), `stale` when not heard from for longer than it
should be (`stale_after`), `stopped` when it exited cleanly. The table bounds
itself, no prune needed: a process that starts deletes the rows not heard
from for RETENTION (a week), and one that stops cleanly deletes the older
stopped rows of its host and kind (cron ticks keep one row per host: the
latest).

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from reclaim_tui import __version__
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.owner import LeaseOwner, holder_alive
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import PassReport
from reclaim_tui.errors import LedgerBusyError, LedgerReadOnlyError

__all__ = [
    "BEAT",
    "DROP_STOPPED_SQL",
    "KINDS",
    "RETENTION",
    "UPSERT_SQL",
    "Beacon",
    "Process",
    "read_processes",
    "stale_after",
]

log = logging.getLogger("reclaim_tui.registry")

KINDS = ("service", "run", "tick", "console", "inbox")
#: The longest a live process goes without writing its row (an idle or paused one).
BEAT = 30.0
#: A process with no interval (a tick, `run --once`) is stale after this long.
LONG_PASS = 600.0
#: Rows not heard from for this long are deleted by the next process that starts.
RETENTION = 7 * 86400.0
#: The most rows the fleet reads (the newest heard from first).
PROCESSES_READ = 200

UPSERT_SQL = Sql(
    lambda d: (
        "INSERT INTO processes(owner, kind, host, pid, started_at, seen_at, state, interval_s,"
        f" passes, last_pass_at, last_pass, version) VALUES ({d.marks(12)})"
        " ON CONFLICT(owner) DO UPDATE SET kind = excluded.kind, seen_at = excluded.seen_at,"
        " state = excluded.state, interval_s = excluded.interval_s, passes = excluded.passes,"
        " last_pass_at = excluded.last_pass_at, last_pass = excluded.last_pass,"
        " version = excluded.version"
    )
)
#: A clean exit drops the older stopped rows of its host and kind (one tick row a host).
DROP_STOPPED_SQL = Sql(
    lambda d: (
        f"DELETE FROM processes WHERE host = {d.p} AND kind = {d.p} AND state = 'stopped'"
        f" AND owner != {d.p}"
    )
)
_COLUMNS = (
    "owner, kind, host, pid, started_at, seen_at, state, interval_s, passes,"
    " last_pass_at, last_pass, version"
)


def stale_after(interval: float | None) -> float:
    """Seconds without a write after which a process not proven alive is stale."""
    if interval is None:
        return LONG_PASS
    return 2 * max(interval, BEAT) + 60.0


def _busy(report: PassReport) -> bool:
    """A pass worth a write at once: it did more than poll."""
    return bool(
        report.errors
        or report.unavailable
        or any(v for k, v in report.counts.items() if k != "polled")
    )


class Beacon:
    """One process's row: what it says of itself, written as it changes.
    Every method swallows (and logs) a failed write."""

    def __init__(
        self,
        ledger: Ledger,
        owner: str,
        kind: str,
        *,
        interval: float | None = None,
        state: str = "up",
    ) -> None:
        self.ledger = ledger
        self.owner = owner
        self.kind = kind
        self.interval = interval
        self.state = state
        self.passes = 0
        self.last_pass_at: float | None = None
        self.last_pass: str | None = None
        self.started_at = ledger.clock.now()
        self.written_at = -math.inf
        #: the registry writes that failed (logged; a test reads it)
        self.failures = 0
        #: after a failed write, none is tried before this time
        self.quiet_until = -math.inf
        parsed = LeaseOwner.parse(owner)
        self.host = parsed.host if parsed else owner
        self.pid = parsed.pid if parsed else None

    async def start(self) -> None:
        """Say it is up; delete the rows nobody wrote for RETENTION."""
        await self._write(prune=True)

    def record(self, report: PassReport) -> None:
        """A pass finished: kept for the next write."""
        self.passes += 1
        self.last_pass_at = self.ledger.clock.now()
        self.last_pass = report.summary()

    async def passed(self, report: PassReport) -> None:
        """A pass finished: its counts, written at once unless it only polled
        (and is not the first) and the row was written less than BEAT
        seconds ago."""
        self.record(report)
        if _busy(report) or self.passes == 1 or self._due():
            await self._write()

    async def changed(self, *, state: str | None = None, interval: float | None = None) -> None:
        """A new state or interval (None: unchanged), written if it differs."""
        new_state = self.state if state is None else state
        new_interval = self.interval if interval is None else interval
        if (new_state, new_interval) == (self.state, self.interval):
            return
        self.state, self.interval = new_state, new_interval
        await self._write()

    async def beat(self) -> None:
        """Still here: written when BEAT seconds passed since the last write."""
        if self._due():
            await self._write()

    async def stopped(self) -> None:
        """A clean exit; the older stopped rows of this host and kind go."""
        self.state = "stopped"
        await self._write(drop_stopped=True)

    def _due(self) -> bool:
        return self.ledger.clock.now() - self.written_at >= BEAT

    async def _write(self, *, prune: bool = False, drop_stopped: bool = False) -> None:
        now = self.ledger.clock.now()
        if self.ledger.readonly or now < self.quiet_until:
            return
        values = (
            self.owner, self.kind, self.host, self.pid, self.started_at, now, self.state,
            self.interval, self.passes, self.last_pass_at, self.last_pass, __version__,
        )  # fmt: skip
        try:
            async with self.ledger.write() as db:
                await db.execute(UPSERT_SQL, values)
                if prune:
                    await db.execute(
                        Sql(lambda d: f"DELETE FROM processes WHERE seen_at < {d.p}"),
                        (now - RETENTION,),
                    )
                    if self.ledger.prune_before_sql is not None:
                        await db.execute(self.ledger.prune_before_sql, (now - RETENTION,))
                if drop_stopped:
                    await db.execute(DROP_STOPPED_SQL, (self.host, self.kind, self.owner))
        except Exception as exc:  # the registry never fails a pass
            self.failures += 1
            # A locked or full ledger: no second wait of busy_timeout for the
            # registry's sake before BEAT seconds passed (the exit's included).
            self.quiet_until = now + BEAT
            # A ledger that cannot be written at all (locked, a read-only file) is
            # the pass's own error, said once by the command (its exit 4); a
            # right missing on the registry's table alone is this warning's.
            whole = isinstance(exc, LedgerBusyError) or type(exc) is LedgerReadOnlyError
            level = logging.DEBUG if whole else logging.WARNING
            log.log(level, "process registry: %s not written: %s", self.kind, exc)
            return
        self.written_at = now


@dataclass(frozen=True, slots=True)
class Process:
    """A registered process as the fleet shows it; `condition` is judged at
    the read: alive, stale, gone or stopped."""

    owner: str
    kind: str
    host: str
    pid: int | None
    started_at: float
    seen_at: float
    state: str
    interval: float | None
    passes: int
    last_pass_at: float | None
    last_pass: str | None
    version: str
    condition: str


def _condition(owner: str, state: str, seen_at: float, interval: float | None, now: float) -> str:
    if state == "stopped":
        return "stopped"
    alive = holder_alive(owner)
    if alive is False:
        return "gone"
    if alive is None and now - seen_at > stale_after(interval):
        return "stale"
    return "alive"


async def read_processes(ledger: Ledger, now: float, limit: int = PROCESSES_READ) -> list[Process]:
    """The registered processes, those still running first, then the newest heard from."""
    rows = await ledger.select(
        Sql(lambda d: f"SELECT {_COLUMNS} FROM processes ORDER BY seen_at DESC LIMIT {d.p}"),
        [limit],
    )
    found = []
    for owner, kind, host, pid, started, seen, state, interval, passes, at, last, ver in rows:
        interval = None if interval is None else float(interval)
        found.append(
            Process(
                owner, kind, host, None if pid is None else int(pid), float(started),
                float(seen), state, interval, int(passes), None if at is None else float(at),
                last, ver, _condition(owner, state, float(seen), interval, now),
            )
        )  # fmt: skip
    order = {"alive": 0, "stale": 1, "gone": 2, "stopped": 3}
    found.sort(key=lambda p: (order[p.condition], -p.seen_at))
    return found
