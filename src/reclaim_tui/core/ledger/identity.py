"""Which ledger file this is, and whether it is still the one a process opened.

A SQLite ledger replaced under running processes must never be taken for a
fresh one: a tick that "creates" a ledger where one was would send every job
of its jobs file again, and a service writing to a file that was moved away
or overwritten records nothing anyone will read.

- **The ledger id**: migration 6 gives every ledger a random id, stored in
  the ledger (`meta`, key `ledger_id`).
- **The marker**: `<ledger>.ledger-id`, a file beside the ledger holding that
  id, written by every writable open. A ledger reached through a symbolic
  link has one beside the link and one beside its real file (where SQLite
  keeps its `-wal`), and both are read: a process that reaches it by another
  path still finds what the first left. It is outside the ledger on purpose: a
  truncated (or deleted) ledger cannot say that it existed, its marker can.
  A file beside the ledger moves and is backed up with its directory, needs
  no registry shared by users or containers, and an operator who does mean
  to start a new ledger there removes it (the refusal says so).
- **Refused**: creating a ledger in a file that is empty (or missing) while
  its marker is there, or while a non-empty WAL (`<ledger>-wal`) is beside
  it: SQLite would start a new ledger over the WAL of the one that was.
- **Not an output**: a file a command writes for the user (`export -o`,
  a prune's archive, the service's `--log` and `--control`) is refused when
  it is the ledger or one of the files beside it (`SIDE_FILES`), however it
  is named (`refuse_ledger_file`): an export renamed over the ledger
  replaces it, an archive appended to the marker is lost at the next open.
- **The service's check** (`snapshot` / `changed`), each pass: the path's
  device and inode (an `mv` over it), the file's size (a truncation), and the
  ledger id and the `events` sequence *as stored in the main file*, read with
  SQLite's `immutable` open, which ignores the WAL (a `cp` of another ledger,
  or of an older copy of this one, over it). The main file changes only at a
  checkpoint, and a checkpoint only moves that sequence forward: a smaller
  one means the file was overwritten with an older copy. (A copy taken since
  the last checkpoint is the same bytes as the file: nothing to lose.)
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from reclaim_tui.core.ledger.urls import is_database_url
from reclaim_tui.errors import ConfigError, LedgerError

__all__ = [
    "LEDGER_ID_SQL",
    "SIDE_FILES",
    "TURN_SUFFIX",
    "UNREADABLE_LIMIT",
    "FileSnapshot",
    "LedgerReplacedError",
    "changed",
    "found_marker",
    "marker_path",
    "other_marker",
    "read_only_uri",
    "refuse_ledger_file",
    "refuse_linked",
    "refuse_other_ledger",
    "refuse_replaced",
    "snapshot",
    "write_marker",
]

LEDGER_ID_SQL = "SELECT value FROM meta WHERE key = 'ledger_id'"
_SEQ_SQL = "SELECT seq FROM sqlite_sequence WHERE name = 'events'"


class LedgerReplacedError(LedgerError):
    """The ledger file is not the one that was there (exit 4)."""


#: the marker's name is the ledger's with this after it
MARKER_SUFFIX = ".ledger-id"
#: the write turn's lock file (core/ledger/sqlite/turn.py), named the same way
TURN_SUFFIX = "-turn"

#: The files kept beside a SQLite ledger, by what follows the ledger's name,
#: with what each one is: SQLite's own, then reclaim-tui's.
SIDE_FILES = {
    "-wal": "write-ahead log",
    "-shm": "WAL index",
    "-journal": "rollback journal",
    TURN_SUFFIX: "write-turn lock file",
    MARKER_SUFFIX: "ledger-id marker",
}


def marker_path(path: str | Path) -> Path:
    return Path(f"{path}{MARKER_SUFFIX}")


def read_only_uri(path: str, *, immutable: bool = False) -> str:
    """SQLite's URI opening the file at `path` read-only (and `immutable`:
    the WAL and every lock ignored). The path is percent-encoded
    (https://www.sqlite.org/uri.html): a `#`, `?` or `%` in a file's name
    read as they are would end the name there and open (and create)
    another file."""
    uri = f"{Path(path).absolute().as_uri()}?mode=ro"
    return f"{uri}&immutable=1" if immutable else uri


def _paths(path: str | Path) -> list[Path]:
    """`path`, and its real file's path when symbolic links lead elsewhere."""
    real = os.path.realpath(path)
    return [Path(path)] if real == os.path.abspath(path) else [Path(path), Path(real)]


def refuse_ledger_file(what: str, target: str | Path, db: str) -> None:
    """ConfigError (exit 2) when `target`, a file a command would write, is
    the SQLite ledger `db` or one of its `SIDE_FILES`, beside `db` or beside
    its real file. Compared as files, not as names: another spelling, a
    symbolic link, a hard link (the same device and inode), or a link to a
    side file not made yet (the same real path). A ledger on a server has no
    file here to overwrite."""
    if is_database_url(db) or db in ("", ":memory:"):
        return
    real = os.path.realpath(target)
    same = _file_id(target)
    for name in _paths(db):
        for suffix, kind in (("", ""), *SIDE_FILES.items()):
            file = f"{name}{suffix}"
            if real != os.path.realpath(file) and (same is None or same != _file_id(file)):
                continue
            it = f"the ledger {db} itself" if not kind else f"{file}, the {kind} of the ledger {db}"
            raise ConfigError(
                f"{what} {target}: that is {it}: refusing to write there, it would damage"
                " the ledger (name another file)"
            )


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """The (device, inode) of the file at `path`, None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _markers(path: str | Path) -> Iterator[tuple[Path, str]]:
    """Each marker of the ledger at `path` (beside it, then beside its real
    file) with what it says."""
    for name in _paths(path):
        marker = marker_path(name)
        said = _marker_says(marker)
        if said is not None:
            yield marker, said


def found_marker(path: str | Path) -> tuple[Path, str] | None:
    """The marker of the ledger at `path` (beside it or its real file), if
    any, and the id it says."""
    return next(_markers(path), None)


def _marker_says(marker: Path) -> str | None:
    """What the marker says (its first line, at most 64 characters; "?" when
    this user may not read it); None when no marker stands at its name. Only
    a regular file is one: a FIFO planted there would block a read for ever,
    a folder cannot be read, and a symbolic link is not followed."""
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except PermissionError:
        return "?" if marker.is_file() and not marker.is_symlink() else None
    except OSError:
        return None  # none there, a symbolic link (ELOOP), gone meanwhile
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, 256).decode("utf-8", errors="replace")
    except OSError:
        return "?"
    finally:
        os.close(fd)
    lines = text.strip().splitlines()
    return lines[0][:64] if lines else ""


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def refuse_replaced(path: str) -> None:
    """Before a ledger would be created at `path`: refuse when one was there."""
    db = Path(path)
    size = _size(db)
    if size:  # a file with content: SQLite's own checks (and _inspect) apply
        return
    what = "empty" if size == 0 else "missing"
    for name in _paths(path):
        wal = _size(Path(f"{name}-wal"))
        if wal:
            raise LedgerReplacedError(
                f"{path}: the ledger file is {what} but its WAL ({name}-wal, {wal} bytes) is"
                " beside it: it was truncated or replaced under a process using it; refusing"
                " to start a new ledger there (restore the ledger from a backup)"
            )
    found = found_marker(path)
    if found is not None:
        marker, known = found
        raise LedgerReplacedError(
            f"{path}: the ledger file is {what}, but {marker} says ledger {known} was"
            " here: refusing to start a new ledger in its place, which would send its jobs"
            f" again (restore the ledger from a backup; to start a new one, remove {marker})"
        )


def refuse_linked(path: str) -> None:
    """A LedgerError (exit 4) before writing a ledger file that has more than
    one name (hard links, `cp -al`). SQLite names its WAL and shared memory
    after the name a process opened: two processes writing under two names
    would each keep their own WAL, with no lock between them, and the rows
    one wrote would be lost at the other's checkpoint (jobs sent twice, the
    ledger corrupt)."""
    try:
        links = os.stat(path).st_nlink
    except OSError:
        return  # a new ledger, or one the open will say more about
    if links > 1:
        raise LedgerError(
            f"{path}: the ledger file has {links} names (hard links); SQLite keeps a WAL"
            " per name, so writers under two names would lose each other's rows. Keep one"
            f" name and remove the others (`find / -xdev -samefile {path}` lists them)"
        )


def other_marker(path: str, ledger_id: str | None) -> tuple[Path, str] | None:
    """A marker beside the ledger at `path` (or its real file) saying another
    ledger than `ledger_id` was here (None for a file that holds no ledger
    yet): the marker and what it says; None when every marker agrees."""
    return next(((m, said) for m, said in _markers(path) if said not in ("", "?", ledger_id)), None)


def refuse_other_ledger(path: str, ledger_id: str | None) -> None:
    """LedgerReplacedError (exit 4) when the file at `path` holds another
    ledger than its marker says was there (`ledger_id`; None: no ledger yet,
    a file about to be made one). Another ledger's file restored in its
    place, or an empty SQLite file, would otherwise be taken as this ledger
    and every job of the jobs file sent again."""
    found = other_marker(path, ledger_id)
    if found is None:
        return
    marker, said = found
    holds = f"ledger {ledger_id}" if ledger_id else "no ledger"
    raise LedgerReplacedError(
        f"{path}: the file holds {holds}, but {marker} says ledger {said} was here: another"
        " file was put in its place (a wrong restore?); refusing to use it, which would send"
        f" that ledger's jobs again (restore the right file; to use this one here on"
        f" purpose, remove {marker})"
    )


def write_marker(path: str, ledger_id: str) -> None:
    """The markers beside the ledger (and its real file) say `ledger_id`
    (each written only when it does not)."""
    for name in _paths(path):
        _write_one(marker_path(name), ledger_id)


def _write_one(marker: Path, ledger_id: str) -> None:
    """`ledger_id` into the marker, through a temporary file of a short,
    unguessable name made new (O_EXCL, never through a symbolic link
    planted at its name, never past the longest name the folder takes) and
    renamed over it."""
    if _marker_says(marker) == ledger_id:
        return
    tmp = marker.with_name(f".reclaim-{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666
        )
    except OSError:
        # A directory we may not write to (a read-only mount): the ledger
        # works; only the protection of a truncated file is missing.
        return
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(f"{ledger_id}\n".encode())
        os.replace(tmp, marker)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


#: Checks in a row that could not read the main file before that is a change
#: (a read may meet a checkpoint half-way: that passes at the next check).
UNREADABLE_LIMIT = 3


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """What `changed` compares, as seen at one moment."""

    device: int | None
    inode: int | None
    size: int | None
    #: the ledger id in the main file (None: not checkpointed there yet)
    stored_id: str | None
    #: the events sequence in the main file (0: none yet)
    stored_events: int
    #: checks in a row whose read of the main file failed (0: this one read it)
    unreadable: int = 0
    #: the main file's newest event: (id, what it says), None when it has none
    last_event: tuple[int, str] | None = None


_LAST_EVENT_SQL = "SELECT id, at, idem, to_status, note FROM events ORDER BY id DESC LIMIT 1"


def event_text(at: object, idem: object, to_status: object, note: object) -> str:
    """An event as `last_event` compares it (the same text from either read)."""
    return repr((float(at), str(idem), str(to_status or ""), str(note)))  # type: ignore[arg-type]


def _stored(path: str) -> tuple[str | None, int, tuple[int, str] | None] | None:
    """(ledger id, events sequence) as the main file holds them, WAL ignored;
    None when the file could not be read as a SQLite database. The file is
    opened through SQLite, never by Python itself: closing a descriptor of a
    file drops every lock this process holds on it (POSIX), SQLite's too,
    and SQLite defers the close of its own while a lock is held."""
    try:
        conn = sqlite3.connect(read_only_uri(path, immutable=True), uri=True)
    except sqlite3.Error:
        return None
    try:
        last = conn.execute(_LAST_EVENT_SQL).fetchone() if _value(conn, _SEQ_SQL) else None
        event = (int(last[0]), event_text(*last[1:])) if last else None
        return _value(conn, LEDGER_ID_SQL), int(_value(conn, _SEQ_SQL) or 0), event
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _value(conn: sqlite3.Connection, sql: str) -> str | None:
    try:
        row = conn.execute(sql).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None  # not in the main file yet (the WAL has it)
        raise
    return str(row[0]) if row else None


def snapshot(path: str, before: FileSnapshot | None = None) -> FileSnapshot:
    """The file at `path` now. A main file that cannot be read keeps what
    `before` read, and counts how many checks in a row could not."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return FileSnapshot(None, None, None, None, 0)
    stored = _stored(path) if st.st_size else (None, 0, None)
    if stored is None:
        kept = before or FileSnapshot(None, None, None, None, 0)
        return FileSnapshot(
            st.st_dev, st.st_ino, st.st_size, kept.stored_id, kept.stored_events,
            unreadable=kept.unreadable + 1,
        )  # fmt: skip
    return FileSnapshot(st.st_dev, st.st_ino, st.st_size, stored[0], stored[1], 0, stored[2])


def changed(ledger_id: str, before: FileSnapshot, now: FileSnapshot) -> str | None:
    """What changed between two snapshots of the file a process opened as
    ledger `ledger_id`; None when it is still that ledger."""
    if now.inode is None:
        return "the ledger file was removed"
    if (now.device, now.inode) != (before.device, before.inode):
        return (
            f"the ledger file was replaced (device/inode {before.device}/{before.inode}"
            f" → {now.device}/{now.inode})"
        )
    if not now.size:
        return f"the ledger file was truncated ({before.size} → {now.size} bytes)"
    if now.unreadable >= UNREADABLE_LIMIT:
        return f"the ledger file cannot be read as a SQLite ledger ({now.unreadable} checks)"
    if now.stored_id is not None and now.stored_id != ledger_id:
        return f"the ledger file now holds another ledger (id {ledger_id} → {now.stored_id})"
    if now.stored_events < before.stored_events:
        return (
            "the ledger file was overwritten with an older copy (its events sequence went"
            f" back from {before.stored_events} to {now.stored_events})"
        )
    return None
