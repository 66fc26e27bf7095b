"""Is anything due? One synchronous look at a SQLite ledger before a cron tick
imports asyncio, aiosqlite, the engine and the sinks (an idle tick's
start-up was most of its CPU).

`nothing_due` answers True only when a tick would certainly do nothing: the
ledger is at this version's schema (nothing to migrate) and in WAL mode, and
no row is due for any pass's claim. The question is the union of every
claim's `WHERE` (core/ledger/base.py: sendable, pollable, orphans,
undelivered, pending cancels; tests/unit/test_idle_tick.py holds them equal),
asked without their lease test: a row due but leased by another process
makes it say "look closer", never "nothing". It does what an idle tick does
to the ledger: takes the write lock as a claim does (`BEGIN IMMEDIATE`, so a
read-only or locked ledger fails here as it would there), writes the
ledger's marker (core/ledger/identity.py) and the tick's row in the process registry
(core/ledger/registry.py: a tick that found nothing, stopped, as a full idle tick leaves
it — else the fleet would show a cron tick's last busy pass as its last).
Anything else it cannot vouch for (a new file, an old schema, an error)
answers False: the full tick runs and says what it says.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reclaim_tui import __version__
from reclaim_tui.core.ledger.identity import LEDGER_ID_SQL, other_marker, write_marker
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.registry import DROP_STOPPED_SQL, UPSERT_SQL
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION, map_sqlite_error
from reclaim_tui.core.models import PassReport
from reclaim_tui.errors import LedgerBusyError, LedgerReadOnlyError

__all__ = ["DUE_SQL", "nothing_due"]

#: A row some pass of a tick would claim now, leases aside: a `submitted` row
#: (a poll, or the orphan of a follow-up turn), a `done` one (the sink again),
#: a `reserving` one not held (a send, or an orphan), a cancelled one still held
#: for the API's confirmation. Three probes of the (status, next_at) index.
DUE_SQL = (
    "SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('submitted', 'done') AND next_at <= ?1)"
    " OR EXISTS (SELECT 1 FROM jobs WHERE status = 'reserving' AND next_at <= ?1 AND held = 0)"
    " OR EXISTS (SELECT 1 FROM jobs WHERE status = 'cancelled' AND next_at <= ?1 AND held = 1)"
)

_TABLES_SQL = (
    "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
    " AND name IN ('jobs', 'results', 'events', 'meta')"
)


def nothing_due(path: str, *, busy_timeout: float, now: float) -> bool:
    """True when a tick at `now` would find nothing to do in the SQLite ledger
    at `path` (its marker written, as opening it writable does); False when
    the full tick must look. A ledger locked past `busy_timeout` raises
    LedgerBusyError, as the tick's claim would."""
    file = Path(path)
    try:
        st = file.stat()
        if not file.is_file() or st.st_size == 0 or st.st_nlink > 1:
            # a new ledger (or a replaced one), or a file of several names
            # (refused for writing): opening it decides
            return False
        db = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout)
    except (OSError, sqlite3.Error):
        return False
    try:
        return _look(db, path, now)
    except sqlite3.Error as exc:
        mapped = map_sqlite_error(exc, path)
        if isinstance(mapped, LedgerBusyError):
            raise mapped from exc  # the full tick would wait as long again
        return False
    finally:
        db.close()


def _look(db: sqlite3.Connection, path: str, now: float) -> bool:
    if _one(db, "PRAGMA user_version") != SCHEMA_VERSION:
        return False  # a migration to run, or a newer ledger to refuse
    if str(_one(db, "PRAGMA journal_mode")).lower() != "wal" or _one(db, _TABLES_SQL) != 4:
        return False
    db.execute("BEGIN IMMEDIATE")  # the lock every claim takes
    try:
        ledger_id = _one(db, LEDGER_ID_SQL)
        due = _one(db, DUE_SQL, (now,))
        if not due and ledger_id is not None:
            _register(db, now)
    finally:
        db.execute("COMMIT")
    if due or ledger_id is None or other_marker(path, str(ledger_id)) is not None:
        return False  # the full tick decides (another ledger's file is refused there)
    write_marker(path, str(ledger_id))
    return True


def _register(db: sqlite3.Connection, now: float) -> None:
    """The tick's registry row, as the full tick's Beacon leaves it after an
    idle pass: one pass, nothing done, stopped (a failure is not the tick's)."""
    owner = this_process()
    values = (
        str(owner), "tick", owner.host, owner.pid, now, now, "stopped", None, 1, now,
        PassReport().summary(), __version__,
    )  # fmt: skip
    try:
        db.execute(UPSERT_SQL, values)
        db.execute(DROP_STOPPED_SQL, (owner.host, "tick", str(owner)))
    except sqlite3.Error as exc:
        if isinstance(map_sqlite_error(exc, ""), LedgerReadOnlyError):
            # A file this process may not write (BEGIN IMMEDIATE takes WAL's
            # lock without writing): not idle, the full tick says so (exit 4).
            raise
        # otherwise the registry never fails a pass (core/ledger/registry.py's rule)


def _one(db: sqlite3.Connection, sql: str, params: tuple[float, ...] = ()) -> object:
    row = db.execute(sql, params).fetchone()
    return row[0] if row else None
