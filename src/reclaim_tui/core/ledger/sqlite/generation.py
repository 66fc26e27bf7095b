"""Whether a SQLite ledger still holds every commit a service made to it.

The service's file check (core/ledger/identity.py) sees the file: its inode, size, id
and the events sequence in the main file. A ledger can go back in time
without any of those changing: SQLite's backup API (`sqlite3 ledger.db
".restore old.db"`) writes an older copy into the same file, same inode,
same id, through the WAL; and a copy that went on elsewhere (`VACUUM INTO`,
then written to on another path) copied over the file is the same ledger
by every field the check reads. A service writing on would send every job
again that the older copy had not sent.

So a service keeps a **generation** of its own in the ledger: a `meta` row
(`generation:<owner>`) it alone writes, bumped by a compare-and-set inside
each of its write transactions, right before COMMIT. The service knows the
value it last committed; the ledger must hold exactly that:

- before each pass, one read of that row (`generation_change`);
- at each commit, the compare-and-set itself: a transaction whose ledger
  no longer holds the last value is rolled back (LedgerReplacedError), so
  nothing is written to a ledger that went back or branched.

An older copy holds an older value (or no row: a copy from before the
service started); a branch holds the value of the moment it was copied.
A copy that went on elsewhere put over the file while the live WAL still
holds this service's recent pages is read by the service through those
pages: its own generation looks right. The file itself shows it: the main
file's newest event (read without the WAL, core/ledger/identity.py's `snapshot`) must
be an event of the ledger the service sees (`branch_change`): a main file
whose events sequence is past the live ledger's, or whose newest event says
something else under the same id, is another history.

Maintenance that keeps the content (VACUUM, checkpoints, `.backup` from the
live ledger, a restore while the service is stopped) changes nothing here:
a service started after a restore writes a row of its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from reclaim_tui.core.ledger.identity import FileSnapshot, event_text

__all__ = [
    "BUMP_SQL",
    "DROP_SQL",
    "READ_SQL",
    "START_SQL",
    "branch_change",
    "describe",
    "key_for",
]

START_SQL = "INSERT OR REPLACE INTO meta(key, value) VALUES (?, '0')"
BUMP_SQL = "UPDATE meta SET value = ? WHERE key = ? AND value = ?"
READ_SQL = "SELECT value FROM meta WHERE key = ?"
DROP_SQL = "DELETE FROM meta WHERE key = ?"


def key_for(owner: str) -> str:
    return f"generation:{owner}"


def describe(committed: int, found: str | None) -> str:
    """What a ledger holding `found` (None: no row) means for a service whose
    last commit was generation `committed`."""
    if found is None:
        return (
            f"the ledger no longer holds this service's commits (generation {committed} is"
            " gone): an older copy was restored into it or copied over it"
        )
    if found.isdigit() and int(found) < committed:
        return (
            f"the ledger went back in time (this service committed generation {committed},"
            f" the ledger holds {found}): an older copy was restored into it"
        )
    return (
        f"the ledger branched (this service committed generation {committed}, the ledger"
        f" holds {found}): a copy that went on elsewhere was put in its place"
    )


_LIVE_EVENT_SQL = (
    "SELECT s.seq, e.at, e.idem, e.to_status, e.note FROM sqlite_sequence AS s"
    " LEFT JOIN events AS e ON e.id = ? WHERE s.name = 'events'"
)


async def branch_change(
    fetch: Callable[[str, Sequence[Any]], Awaitable[list[Any]]], main: FileSnapshot
) -> str | None:
    """Whether the main file (`main`, read without the WAL) holds another
    history than the ledger the service reads; None when it agrees (or
    cannot tell: an event pruned since is no proof)."""
    if main.last_event is None:
        return None
    event_id, said = main.last_event
    rows = await fetch(_LIVE_EVENT_SQL, (event_id,))
    live_seq = int(rows[0][0] or 0) if rows else 0
    live_event = event_text(*rows[0][1:]) if rows and rows[0][1] is not None else None
    if main.stored_events > live_seq:
        return (
            f"the ledger file holds events this ledger never wrote (its events sequence is"
            f" {main.stored_events}, the ledger's {live_seq}): a copy that went on elsewhere"
            " was put in its place"
        )
    if live_event is not None and live_event != said:
        return (
            f"the ledger file's event {event_id} is not this ledger's: a copy that went on"
            " elsewhere was put in its place"
        )
    return None
