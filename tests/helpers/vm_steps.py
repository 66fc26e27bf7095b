"""Counting SQLite's virtual machine instructions, for tests that show a
statement's work does not grow with the ledger (a count, never a time)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

__all__ = ["counted_steps"]


@contextlib.contextmanager
def counted_steps(db: sqlite3.Connection) -> Iterator[list[int]]:
    """Every VM instruction `db` runs inside the block, counted in the
    one-item list it yields."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0  # go on

    db.set_progress_handler(step, 1)
    try:
        yield steps
    finally:
        db.set_progress_handler(None, 1)
