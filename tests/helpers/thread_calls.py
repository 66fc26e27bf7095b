"""Counting the calls a test's code hands to an aiosqlite connection's thread."""

from __future__ import annotations

from collections import Counter
from typing import Any

import aiosqlite
import pytest

__all__ = ["count_thread_calls"]


def count_thread_calls(conn: aiosqlite.Connection, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """From now on, every call handed to `conn`'s thread (through
    `Connection._execute`, which aiosqlite's public methods and the ledger's
    one-call transactions all go through), counted by the function's name."""
    calls: Counter[str] = Counter()
    real = conn._execute

    async def counted(fn: Any, *args: Any, **kw: Any) -> Any:
        calls[getattr(fn, "__name__", "?")] += 1
        return await real(fn, *args, **kw)

    monkeypatch.setattr(conn, "_execute", counted)
    return calls
