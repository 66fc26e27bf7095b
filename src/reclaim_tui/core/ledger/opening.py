"""Opening a ledger: the one place that picks the engine by the `--db` given.

A PostgreSQL URL or libpq keyword DSN (core/ledger/urls.py) opens a
`PgLedger`, and only then is psycopg imported (start-up time;
tests/unit/test_startup.py); anything else is an SQLite file.

What else the CLI, the console and the runner must know of a `--db` is
asked here too (`ledger_file`: the file it is, if any), so "a file or a
server?" is decided in one module.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.urls import is_database_url
from reclaim_tui.errors import LedgerError

__all__ = [
    "ledger_file",
    "open_ledger",
    "refuse_no_file",
    "require_folder",
    "require_ledger_file",
    "same_ledger",
]


def ledger_file(db: str | Path) -> Path | None:
    """The file of the SQLite ledger `db` names, as given (relative stays
    relative); None for a ledger on a server: nothing on this machine to
    look at, resolve or create a folder for."""
    spath = str(db)
    return None if is_database_url(spath) else Path(spath)


def same_ledger(one: str, other: str) -> bool:
    """Whether two `--db`s name the same ledger: one file (however it is
    reached), or the same server DSN."""
    mine, theirs = ledger_file(one), ledger_file(other)
    if mine is None or theirs is None:
        return one == other
    return mine.resolve() == theirs.resolve()


async def open_ledger(
    db: str | Path,
    *,
    clock: Clock | None = None,
    busy_timeout: float = 10.0,
    readonly: bool = False,
    create: bool = True,
) -> Ledger:
    """Open (and migrate) the ledger `db` names. Raises a LedgerError subclass.

    A ledger that is not a reclaim-tui ledger, or one written by a newer
    version, is refused before a byte of it is written; `create=False`
    refuses to start a new one."""
    spath = str(db)
    if is_database_url(spath):
        from reclaim_tui.core.ledger.postgres.ledger import PgLedger  # psycopg only when asked for

        return await PgLedger.open(
            spath, clock=clock, busy_timeout=busy_timeout, readonly=readonly, create=create
        )
    from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger  # aiosqlite only when asked for

    return await SqliteLedger.open(
        spath, clock=clock, busy_timeout=busy_timeout, readonly=readonly, create=create
    )


def require_folder(db: str) -> None:
    """A LedgerError (exit 4) naming the ledger's folder when it is missing.

    SQLite says only "unable to open database file" for a path whose folder
    does not exist; no command creates folders (a typo in --db should
    not leave a tree of empty directories behind).
    """
    refuse_no_file(db)
    file = ledger_file(db)
    if file is None:
        return  # a server's database: nothing on this machine to check
    folder = file.parent
    if not folder.exists():
        raise LedgerError(
            f"{db}: the folder {folder} does not exist (create it, or pick another --db)"
        )
    if not folder.is_dir():
        raise LedgerError(f"{db}: {folder} is not a folder")
    require_ledger_file(db)


def refuse_no_file(db: str) -> None:
    """A LedgerError (exit 4) for a `--db` that names no file a ledger can
    live in: an empty one (`--db "$LEDGER"` with the variable unset: SQLite
    opens a private temporary database), an in-memory database, or one of
    SQLite's `file:` URIs (which SQLite may read as a URI or as a file of
    that name, while the checks beside the ledger look at the name). Each
    would take jobs, send and pay for them, and keep nothing."""
    if db == "":
        raise LedgerError(
            "--db is empty (an unset variable?): give the ledger's file or URL; an"
            " empty name is a temporary database that keeps nothing"
        )
    if db == ":memory:" or db.startswith("file::memory:"):
        raise LedgerError(
            f"{db}: an in-memory database holds no ledger (it is new and empty for each"
            " process); give the ledger's file or URL"
        )
    if db.startswith("file:"):
        raise LedgerError(
            f"{db}: an SQLite URI, not a ledger's path: give the file's path itself"
            f" (for a file whose name starts with 'file:', write ./{db})"
        )


def require_ledger_file(db: str) -> None:
    """A LedgerError (exit 4) for a path that is there but is no file: a
    folder (SQLite says "disk I/O error"), a pipe (opening it blocks for
    ever), a device such as /dev/null (read as an empty ledger)."""
    if db == ":memory:":
        return
    try:
        mode = os.stat(db).st_mode
    except FileNotFoundError:
        return  # a new ledger (or no ledger yet): the command says which
    except OSError as exc:
        raise LedgerError(f"{db}: cannot be read ({exc.strerror})") from exc
    if stat.S_ISDIR(mode):
        raise LedgerError(f"{db} is a folder, not a ledger file (give the file inside it)")
    if not stat.S_ISREG(mode):
        kind = "a pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) else "no file"
        raise LedgerError(f"{db} is {kind}, not a ledger file: a ledger is a regular file")
