"""The SQLite ledger's only uses of aiosqlite's private names, kept here
and checked by tests/unit/test_aiosqlite_private.py, which fails when an
aiosqlite release changes them.

- A whole write transaction in ONE call to the connection's thread
  (`in_thread`): aiosqlite's public methods hand one statement (or one
  fetch) to that thread per call, each call a future, a queue put, the
  thread's wake-up and the event loop's; `Connection._execute(fn, *args)`
  is the method every one of them goes through, and it runs any plain
  function of the thread's choosing there, in the order calls were made.
  Several reads in one such call (`awaited_in_thread`), awaited as the
  public methods are, without a task of their own.
- The `sqlite3.Connection` behind it (`raw`), for that function to run its
  statements on; only ever read inside the connection's own thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import aiosqlite

__all__ = ["awaited_in_thread", "in_thread", "raw", "settled"]

T = TypeVar("T")


def in_thread(db: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> asyncio.Task[T]:
    """`fn(*args)` run in `db`'s thread, after every call already handed to
    it: a task, so that its caller may shield it (the thread runs `fn` to its
    end whatever happens to the caller)."""
    call: Any = db._execute(fn, *args)  # type: ignore[no-untyped-call]
    task: asyncio.Task[T] = asyncio.ensure_future(call)
    return task


async def awaited_in_thread(db: aiosqlite.Connection, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` run in `db`'s thread, after every call already handed to
    it, awaited by the caller itself (no task of its own, as aiosqlite's
    public methods): a caller cancelled meanwhile stops waiting, and the
    thread still runs `fn`."""
    result: T = await db._execute(fn, *args)  # type: ignore[no-untyped-call]
    return result


def raw(db: aiosqlite.Connection) -> sqlite3.Connection:
    """The `sqlite3.Connection` `db` runs on (call it in `db`'s thread only)."""
    conn: sqlite3.Connection = db._conn
    return conn


async def settled(task: asyncio.Task[Any]) -> None:
    """Wait until `task` is over, whatever cancels the waiter meanwhile; its
    exception, if any, is taken (the caller is raising its own)."""
    while not task.done():
        try:
            await asyncio.wait((task,))
        except asyncio.CancelledError:
            continue
    if not task.cancelled():
        task.exception()
