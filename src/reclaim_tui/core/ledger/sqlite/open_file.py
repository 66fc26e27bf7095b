"""Opening an SQLite ledger file without harming it, step by step, as
`SqliteLedger.open` (core/ledger/sqlite/ledger.py) runs them:

- `refuse_missing`: a ledger that must exist and does not is refused,
  naming the marker of the ledger that was there (core/ledger/identity.py);
- `refuse_foreign`: a file that is not a reclaim-tui ledger, or was written
  by a newer version, is refused before a byte of it is written;
- `configure`: the connection's durability settings (WAL, `synchronous =
  FULL`, the caches);
- `identify`: the ledger's id (migration 6) and the marker beside its file;
- `reap`: a connection that failed to open is let go while the loop lives.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiosqlite

from reclaim_tui.core.ledger.identity import (
    LEDGER_ID_SQL,
    found_marker,
    refuse_other_ledger,
    write_marker,
)
from reclaim_tui.core.ledger.sqlite.schema import SCHEMA_VERSION
from reclaim_tui.errors import LedgerError, LedgerForeignError, LedgerVersionError

__all__ = ["configure", "identify", "reap", "refuse_foreign", "refuse_missing", "user_version"]


def refuse_missing(path: str) -> None:
    """A ledger asked to exist (`create=False`) whose file is not there."""
    if Path(path).exists():
        return
    found = found_marker(path)
    if found is not None:  # `tick` would refuse: say why, not send them there
        marker, known = found
        raise LedgerError(
            f"{path}: no ledger here, but {marker} says ledger {known} was: restore it"
            f" from a backup (to start a new one, remove {marker})"
        )
    raise LedgerError(f"{path}: no ledger here (run `tick` or `submit` first)")


async def user_version(db: aiosqlite.Connection) -> int:
    """The schema version the file holds (0: a new file, or not a ledger)."""
    async with db.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def refuse_foreign(db: aiosqlite.Connection, path: str) -> None:
    """Refuse a foreign or newer file while it is still untouched.

    The version and the table list are read in one read transaction: read
    apart, a process that migrates a brand-new file between the two reads
    shows us version 0 *and* its tables — a "foreign" ledger (CI saw this
    with eight ticks opening one new file at once)."""
    await db.execute("BEGIN")
    try:
        version = await user_version(db)
        async with db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ) as cur:
            tables = {r[0] for r in await cur.fetchall()}
    finally:
        await db.execute("COMMIT")
    ours = {"jobs", "results", "events"}
    if tables and (version == 0 or not ours <= tables):
        listed = ", ".join(sorted(tables)[:8]) or "none"
        raise LedgerForeignError(
            f"{path}: not a reclaim-tui ledger (schema version {version}, tables:"
            f" {listed}); refusing to touch it — choose another --db"
        )
    if version > SCHEMA_VERSION:
        raise LedgerVersionError(
            f"{path}: written by a newer reclaim-tui (schema {version}, this "
            f"version knows up to {SCHEMA_VERSION}); upgrade reclaim-tui to open it"
        )


async def configure(db: aiosqlite.Connection, *, readonly: bool) -> None:
    """The durability settings every connection runs with."""
    if not readonly:
        # https://www.sqlite.org/wal.html — readers never block the writer.
        await db.execute("PRAGMA journal_mode = WAL")
    # FULL: a commit is on disk before COMMIT returns, also in WAL mode
    # (https://www.sqlite.org/pragma.html#pragma_synchronous).
    await db.execute("PRAGMA synchronous = FULL")
    await db.execute("PRAGMA foreign_keys = ON")
    # A 64 MiB page cache keeps the indexes of a large ledger in memory,
    # and a larger auto-checkpoint folds repeated writes of the same pages
    # (a row moves through 4 states) into one checkpoint write.
    await db.execute("PRAGMA cache_size = -65536")
    await db.execute("PRAGMA temp_store = MEMORY")
    if not readonly:
        await db.execute("PRAGMA wal_autocheckpoint = 8192")


async def identify(db: aiosqlite.Connection, path: str, *, readonly: bool) -> str | None:
    """The ledger's id (migration 6), and the marker beside its file saying it;
    None for an old ledger opened read-only (no id until it is migrated)."""
    async with db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ) as cur:
        if await cur.fetchone() is None:
            return None
    async with db.execute(LEDGER_ID_SQL) as cur:
        row = await cur.fetchone()
    ledger_id = str(row[0]) if row else None
    if ledger_id and not readonly and path != ":memory:":
        refuse_other_ledger(path, ledger_id)
        write_marker(path, ledger_id)
    return ledger_id


async def close_quietly(db: aiosqlite.Connection) -> None:
    """Close a connection whose opening failed, keeping the failure that
    stopped it: a close that fails too still stops aiosqlite's thread."""
    with contextlib.suppress(Exception):
        await db.close()


async def reap(connection: aiosqlite.Connection) -> None:
    """After a failed connect, aiosqlite's worker thread still has to answer
    the stop it was sent; it must do so while our loop is alive, or it dies
    with "Event loop is closed" printed on stderr as the process exits."""
    thread = getattr(connection, "_thread", None)
    if thread is not None:
        await asyncio.to_thread(thread.join, 5.0)
