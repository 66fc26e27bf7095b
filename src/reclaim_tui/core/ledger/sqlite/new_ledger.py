"""Starting a new SQLite ledger is said, and refused beside another ledger.

A `--db` with a typo used to create a new, empty ledger without a word: a
tick with a jobs file then reserved and sent every job again (each one paid
twice), and a console opened an empty screen. Now:

- **Said**: a process that creates a ledger says so (the CLI on stderr, the
  console in its first notice), naming the file.
- **Refused beside another ledger**: when the folder already holds a
  reclaim-tui ledger under another name — a `<name>.ledger-id` marker
  (core/ledger/identity.py) whose `<name>` file is there — a new ledger is started only
  when asked for (`--create`). A typo lands beside the ledger it meant, so
  that is where it is caught; a first ledger in a folder (the README's
  commands, cron's first run, the demo's temporary folder) needs no flag.
  `migrate --to` is exempt: starting a ledger is what it is asked to do.

PostgreSQL is not concerned: a server's database and schema are named,
created and granted by its administrator (core/ledger/postgres/schema.py).
"""

from __future__ import annotations

from pathlib import Path

from reclaim_tui.core.ledger.identity import marker_path
from reclaim_tui.errors import ConfigError

__all__ = [
    "NewLedgerRefused",
    "created_note",
    "other_ledgers",
    "refuse_beside_others",
    "would_create",
]

_MARKER = ".ledger-id"


class NewLedgerRefused(ConfigError):
    """A new ledger beside another one, not asked for with --create (exit 2)."""


def would_create(path: str) -> bool:
    """Whether opening `path` for writing starts a new ledger (no file, or an
    empty one: SQLite writes a new database into it)."""
    if path == ":memory:":
        return False
    try:
        return Path(path).stat().st_size == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False  # the open itself says what is wrong


def other_ledgers(path: str) -> list[Path]:
    """The reclaim-tui ledgers in `path`'s folder under another name."""
    db = Path(path).absolute()  # as SQLite opens it: a `~` is a folder of that name
    mine = marker_path(db).name
    found: list[Path] = []
    try:
        markers = sorted(db.parent.glob(f"*{_MARKER}"))
    except OSError:
        return []
    for marker in markers:
        ledger = marker.with_name(marker.name[: -len(_MARKER)])
        if marker.name != mine and ledger.is_file():
            found.append(ledger)
    return found


def refuse_beside_others(path: str) -> None:
    """NewLedgerRefused when the folder holds another ledger (see the module)."""
    others = other_ledgers(path)
    if not others:
        return
    named = ", ".join(str(o) for o in others[:3]) + (" …" if len(others) > 3 else "")
    raise NewLedgerRefused(
        f"{path}: no ledger here, and this folder already holds {named}: is --db mistyped?"
        " A new ledger would reserve and send its jobs again. To start a new ledger"
        " beside it on purpose, add --create"
    )


def created_note(path: str) -> str:
    """What a process says when it has started a new ledger."""
    return f"created a new ledger at {path} (there was none)"
