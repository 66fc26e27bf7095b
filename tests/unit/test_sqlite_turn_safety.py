"""The SQLite write turn's lock file and its life (core/ledger/sqlite/turn.py):
what a hostile review of the turn found, each a test that failed on the
turn's first version. The file is opened as SQLite opens its `-wal`: never
through a planted symbolic link (whose target it would chmod), only a
regular file, read-only where it may not be written; a closed turn is
closed for good (a take pending at close is refused, a second close closes
no other file); only the take that holds the turn lets go of it (a late
give-back cannot free a later write's turn); a child forked without exec
does not keep its parent's turn; a file system where flock fails takes no
turn."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import gc
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.ledger.sqlite import hot_writes
from reclaim_tui.core.ledger.sqlite import turn as turn_module
from reclaim_tui.core.ledger.sqlite.aiosqlite_private import in_thread, raw
from reclaim_tui.core.ledger.sqlite.turn import SUFFIX, WriteTurn, open_turn
from reclaim_tui.errors import LedgerBusyError, LedgerError
from tests.helpers.turn import (
    Holder,
    fill_fds_below,
    free,
    free_here,
    ledger_at,
    turn_of,
    until_waiting,
)


async def _made(db: Path, mode: int = 0o664) -> None:
    """A ledger at `db` with no lock file beside it, of `mode`."""
    await (await ledger_at(db)).close()
    os.unlink(str(db) + SUFFIX)
    os.chmod(db, mode)


def _bare_turn(tmp_path: Path, wait: float) -> tuple[Path, WriteTurn]:
    """A turn of its own on an empty file standing for a ledger."""
    db = tmp_path / "l.db"
    db.write_bytes(b"")
    turn = open_turn(str(db), wait)
    assert turn is not None
    return db, turn


def _join_waiting_threads() -> None:
    for thread in threading.enumerate():
        if thread.name.startswith("reclaim-tui write turn"):
            thread.join(10)
            assert not thread.is_alive()


async def test_a_planted_symlink_is_not_followed_nor_its_target_chmodded(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    await _made(db)
    victim = tmp_path / "id_ed25519"
    victim.write_text("secret")
    os.chmod(victim, 0o600)
    os.symlink(victim, str(db) + SUFFIX)
    ledger = await ledger_at(db)
    assert ledger._turn is None  # no turn, and the writes go on
    await ledger.insert_jobs([("k1", "{}", "m")], "test")
    await ledger.close()
    assert stat.S_IMODE(os.stat(victim).st_mode) == 0o600
    assert victim.read_text() == "secret"


async def test_a_file_of_another_kind_in_its_place_is_not_used(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    await _made(db, 0o666)
    os.mkfifo(str(db) + SUFFIX, 0o600)
    ledger = await ledger_at(db)  # and the open of a FIFO does not block
    assert ledger._turn is None
    await ledger.close()
    assert stat.S_IMODE(os.stat(str(db) + SUFFIX).st_mode) == 0o600


async def test_an_existing_lock_file_keeps_its_mode(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    await _made(db, 0o660)
    Path(str(db) + SUFFIX).touch(mode=0o600)
    os.chmod(str(db) + SUFFIX, 0o600)
    await (await ledger_at(db)).close()
    assert stat.S_IMODE(os.stat(str(db) + SUFFIX).st_mode) == 0o600  # only a file made now


async def test_a_lock_file_this_user_may_only_read_still_gives_a_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "l.db"
    await (await ledger_at(db)).close()  # the lock file is there
    real = os.open

    def read_only(name: Any, flags: int, *args: Any) -> int:
        if str(name).endswith(SUFFIX) and flags & os.O_RDWR and not flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return real(name, flags, *args)

    monkeypatch.setattr(os, "open", read_only)  # as root's file is to its service's user
    ledger = await ledger_at(db)
    monkeypatch.undo()
    holder = Holder(db)
    try:
        inserting = asyncio.ensure_future(ledger.insert_jobs([("k1", "{}", "m")], "t"))
        await until_waiting(turn_of(ledger), 1)  # it takes turns through the read-only open
        holder.let_go()
        await inserting
    finally:
        holder.kill()
    await ledger.close()


async def test_a_file_system_where_flock_fails_takes_no_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    fake = types.SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
    )
    monkeypatch.setattr(turn_module, "fcntl", fake)
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)  # its migration writes
    assert ledger._turn is None
    await ledger.insert_jobs([("k1", "{}", "m")], "t")
    await ledger.close()


async def test_a_take_pending_at_close_is_refused_and_lets_go_of_no_other_turn(
    tmp_path: Path,
) -> None:
    db, turn = _bare_turn(tmp_path, 30.0)
    holder = Holder(db)
    try:
        taking = asyncio.ensure_future(turn.take())
        await until_waiting(turn, 1)
        turn.close()
        holder.let_go()
        with pytest.raises(LedgerError, match="closed"):
            await asyncio.wait_for(taking, 20)
        _join_waiting_threads()  # it closed the descriptor after its last wait
        with pytest.raises(LedgerError, match="closed"):
            await turn.take()
        # Another turn of the same file gets the freed number; the first
        # one's let-go and close touch it no more.
        fillers = fill_fds_below(turn._fd)
        try:
            other = open_turn(str(db), 30.0)
            assert other is not None and other._fd == turn._fd  # the number, reused
            ticket = await other.take()
            turn.let_go(ticket)
            turn.close()
            assert not free(db)
            other.let_go(ticket)
            assert free(db)
            other.close()
        finally:
            for fd in fillers:
                os.close(fd)
    finally:
        holder.kill()


async def test_closing_a_ledger_twice_closes_no_other_file(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)
    fd = turn_of(ledger)._fd
    await ledger.close()
    fillers = fill_fds_below(fd)
    victim = os.open(tmp_path / "unrelated", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await ledger.close()  # as aiosqlite's close, a second one does nothing
        os.fstat(victim)
    finally:
        with contextlib.suppress(OSError):
            os.close(victim)
        for f in fillers:
            os.close(f)


async def test_a_write_pending_at_ledger_close_fails_as_a_ledger_error(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)
    holder = Holder(db)
    try:
        inserting = asyncio.ensure_future(ledger.insert_jobs([("k1", "{}", "m")], "t"))
        await until_waiting(turn_of(ledger), 1)
        await ledger.close()
        holder.let_go()
        with pytest.raises(LedgerError):
            await asyncio.wait_for(inserting, 20)
    finally:
        holder.kill()


async def test_a_late_give_back_lets_go_of_no_later_writes_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hot write's caller is cancelled after the thread passed its last
    stop check: it commits, and the leases it took are given back by a
    second transaction, without a turn. A sweep (a host's shutdown cancels
    every task) cancels that give-back's task before the thread ran it; the
    next write takes the turn, and the give-back, run ahead of that write's
    BEGIN, must not let go of it."""
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)
    turn = turn_of(ledger)
    created: list[asyncio.Task[Any]] = []
    real_in_thread = hot_writes.in_thread

    def recording(*args: Any) -> asyncio.Task[Any]:
        task = real_in_thread(*args)
        created.append(task)
        return task

    monkeypatch.setattr(hot_writes, "in_thread", recording)
    at_commit, go, unblock = threading.Event(), threading.Event(), threading.Event()
    armed = [True]

    def trace(statement: str) -> None:  # in the connection's thread
        if armed[0] and statement == "COMMIT":
            armed[0] = False
            at_commit.set()
            go.wait(10)

    await in_thread(ledger._db, raw(ledger._db).set_trace_callback, trace)
    caller = asyncio.ensure_future(ledger._in_thread(lambda c: "out", "me", lambda out: ["k1"]))
    await asyncio.to_thread(at_commit.wait, 10)
    blocker = in_thread(ledger._db, unblock.wait, 10)  # the thread busy after that COMMIT
    caller.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    go.set()
    for _ in range(1000):  # until the give-back is handed to the thread
        if len(created) == 2:
            break
        await asyncio.sleep(0.005)
    assert len(created) == 2
    created[1].cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await caller
    assert not turn._held
    inside, finish = asyncio.Event(), asyncio.Event()
    seen: dict[str, bool] = {}

    async def next_write() -> None:
        async with ledger.write() as c:
            await c.execute("SELECT 1")
            seen["held"] = bool(turn._held)
            seen["free"] = free(db)
            inside.set()
            await finish.wait()

    writing = asyncio.ensure_future(next_write())
    for _ in range(1000):
        if turn._held:
            break
        await asyncio.sleep(0.001)
    unblock.set()  # the thread runs the blocker, the give-back, then the BEGIN
    await asyncio.wait_for(inside.wait(), 20)
    finish.set()
    await writing
    await blocker
    await ledger.close()
    assert seen == {"held": True, "free": False}


_FORKING = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from reclaim_tui.core.clock import ManualClock
    from reclaim_tui.core.ledger.opening import open_ledger

    async def main(db):
        ledger = await open_ledger(db, clock=ManualClock(1.8e9))
        async with ledger.write() as conn:
            child = os.fork()  # a pool's worker, forked while the turn is held
            if child == 0:
                time.sleep(60)
                os._exit(0)
            await conn.execute("SELECT 1")
            print(child, flush=True)
            await asyncio.sleep(60)  # killed here, holding the turn

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_child_forked_without_exec_does_not_keep_the_turn(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    asyncio.run(_made(db))
    parent = subprocess.Popen(
        [sys.executable, "-c", _FORKING, str(db)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert not free(db)
        parent.send_signal(signal.SIGKILL)
        parent.wait(30)
        with sqlite3.connect(db, isolation_level=None, timeout=10) as other:
            other.execute("BEGIN IMMEDIATE")  # SQLite's lock went with the parent
            other.execute("ROLLBACK")
        assert free(db)  # and so did the turn, though the child lives
    finally:
        os.kill(child, signal.SIGKILL)


# A second review's findings.


def _sqlite_lock_free(db: Path) -> bool:
    other = sqlite3.connect(db, isolation_level=None, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        other.close()


async def test_the_turn_is_kept_until_a_swept_writes_rollback_ran(tmp_path: Path) -> None:
    """`write()`'s caller is cancelled inside its transaction and the task
    that rolls it back is cancelled by the same sweep: the turn is kept
    until the connection's thread has run the ROLLBACK."""
    db = tmp_path / "l.db"
    ledger = await ledger_at(db)
    inside, unblock = asyncio.Event(), threading.Event()

    async def writer() -> None:
        async with ledger.write() as conn:
            await conn.execute("INSERT INTO meta(key, value) VALUES ('swept', 'x')")
            inside.set()
            await asyncio.Event().wait()  # cancelled here, the transaction open

    writing = asyncio.ensure_future(writer())
    await asyncio.wait_for(inside.wait(), 20)
    blocker = in_thread(ledger._db, unblock.wait, 20)  # the ROLLBACK will queue behind it
    writing.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    abandons = [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "__name__", "") == "_abandon_and_settle"
    ]
    assert len(abandons) == 1
    abandons[0].cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    try:
        assert not _sqlite_lock_free(db)  # the transaction is still open ...
        assert not free_here(db)  # ... and so the turn is still held
    finally:
        unblock.set()
        await blocker
        await asyncio.gather(writing, return_exceptions=True)
    assert free_here(db) and _sqlite_lock_free(db)  # both let go once it ran
    assert await ledger.select_each([("SELECT value FROM meta WHERE key = 'swept'", ())]) == [[]]
    await ledger.close()


async def test_a_waiting_thread_that_would_not_start_is_a_busy_ledger_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, turn = _bare_turn(tmp_path, 10.0)
    real_start = threading.Thread.start
    failed = [False]

    def start_once_failing(self: threading.Thread) -> None:
        if self.name.startswith("reclaim-tui write turn") and not failed[0]:
            failed[0] = True
            raise RuntimeError("can't start new thread")
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start_once_failing)
    holder = Holder(db)
    try:
        with pytest.raises(LedgerBusyError, match="no thread to wait"):
            await turn.take()
        second = asyncio.ensure_future(turn.take())  # a thread of its own this time
        await until_waiting(turn, 2)
        holder.let_go()
        turn.let_go(await asyncio.wait_for(second, 30))
        assert free_here(db)
    finally:
        holder.kill()
        turn.close()


async def test_a_take_given_up_as_the_thread_answers_leaves_no_unretrieved_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, turn = _bare_turn(tmp_path, 30.0)
    at_settle, go_on = threading.Event(), threading.Event()
    real_settle = turn_module._settle

    def held_settle(request: Any, ticket: int, exc: BaseException | None) -> None:
        at_settle.set()
        go_on.wait(10)
        real_settle(request, ticket, exc)

    monkeypatch.setattr(turn_module, "_settle", held_settle)
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    holder = Holder(db)
    try:
        taking = asyncio.ensure_future(turn.take())
        await until_waiting(turn, 1)
        turn.close()  # the thread will answer "closed" ...
        holder.let_go()
        await asyncio.to_thread(at_settle.wait, 10)
        taking.cancel()  # ... just as its caller gives up
        with pytest.raises(asyncio.CancelledError):
            await taking
        go_on.set()
        _join_waiting_threads()
        for _ in range(5):
            await asyncio.sleep(0)
        del taking
        gc.collect()
        await asyncio.sleep(0)
    finally:
        go_on.set()
        holder.kill()
    assert [str(c.get("message")) for c in reported] == []


def test_a_fifo_this_user_may_only_read_does_not_block_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "l.db"
    db.write_bytes(b"")
    os.mkfifo(str(db) + SUFFIX, 0o644)
    real = os.open

    def read_only(name: Any, flags: int, *args: Any) -> int:
        if str(name).endswith(SUFFIX) and flags & os.O_RDWR and not flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, "Permission denied", str(name))
        return real(name, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(open_turn(str(db), 1.0)), daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():  # a writer end lets the blocked open return
        os.close(real(str(db) + SUFFIX, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
        pytest.fail("the open of a FIFO in the lock file's place blocked")
    assert out == [None]
