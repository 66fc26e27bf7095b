"""A service's watch on its ledger: is it still the ledger it opened? A
file moved over, truncated, overwritten with another ledger or an older copy
(core/ledger/identity.py), or the same file with another history — restored
from a backup, or a branch copied over it (core/ledger/sqlite/generation.py).
Writing on would record into a file nobody reads, or next to state that went
back in time: the service says `ledger_replaced` and stops."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NoReturn

from reclaim_tui.core.ledger.identity import FileSnapshot, LedgerReplacedError, changed, snapshot
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.errors import LedgerCorruptError

__all__ = ["LedgerWatch"]


class LedgerWatch:
    """Checks before each pass; `say` writes the service's JSON line."""

    def __init__(self, ledger: Ledger, say: Callable[..., None]) -> None:
        self.ledger = ledger
        self.say = say
        #: the ledger file as last checked
        self.file: FileSnapshot | None = None

    async def check(self) -> None:
        ledger = self.ledger
        if ledger.ledger_id is None or ledger.path == ":memory:":
            return  # PostgreSQL (no file), or an old ledger opened read-only
        now = await asyncio.to_thread(snapshot, ledger.path, self.file)
        if self.file is not None:
            change = changed(ledger.ledger_id, self.file, now)
            if change is not None and now.inode is None:
                # Moved away (or deleted): SQLite keeps the WAL by the name it
                # opened, so what was written since the last checkpoint is in
                # the WAL left here, and only this name finds it again.
                change += (
                    f"; what this service wrote since the ledger's last checkpoint is in"
                    f" {ledger.path}-wal: put the file back at {ledger.path} before anything"
                    " opens it"
                )
            if change is not None:
                self.replaced(change)
        self.file = now
        try:  # the same file, but another history
            went_back = await ledger.generation_change(None if now.unreadable else now)
        except LedgerCorruptError as exc:
            went_back = f"the ledger cannot be read any more ({exc})"
        if went_back is not None:
            self.replaced(went_back)

    def replaced(self, change: str) -> NoReturn:
        ledger = self.ledger
        self.say("ledger_replaced", db=ledger.path, ledger_id=ledger.ledger_id, change=change)
        raise LedgerReplacedError(
            f"{ledger.path}: {change}; the service stops rather than write to a"
            " ledger that is not the one it opened (restart it once the file is right)"
        )
