"""Whose turn it is to write a SQLite ledger: a lock on a file beside it.

SQLite lets one connection write at a time. A second writer's `BEGIN
IMMEDIATE` finds the lock taken and SQLite's busy handler sleeps and tries
again (1, 2, 5, 10 … up to 100 ms apart): it never learns the moment the lock
is let go. Two processes writing one ledger (two services, a service and a
tick, the console beside either) so lose the time between the holder's
COMMIT and the waiter's next try, and the waiter's work does not overlap the
holder's.

Every write transaction of a `SqliteLedger` first takes this turn: an
exclusive `flock` on `<ledger>-turn`, held from before BEGIN until its
COMMIT or ROLLBACK is over. A waiter blocks in the kernel and is woken as
the holder lets go, so one process prepares its next batch on its own core
while the other writes. The lock is the kernel's: a process that dies (even
by SIGKILL) lets go of it with its file descriptors, and nothing is left to
clean up. SQLite's own lock still guards the file: the turn only orders the
writers that take it, and a writer that does not (an older version, the
`sqlite3` shell, the idle tick's quick look in core/ledger/sqlite/idle.py)
is waited for by the busy handler as before.

The wait is bounded like SQLite's: a turn not had within the ledger's
busy_timeout raises LedgerBusyError, as a lock held that long does. It is
taken on the event loop without blocking when it is free; when it is not, a
daemon thread of the ledger's own waits for it (a process may exit while it
waits), and a turn that came after its caller gave up (cancelled, or timed
out) is let go at once.

No turn is taken where there is no file to lock: a read-only ledger, one in
memory, a directory where the lock file cannot be made, a system without
`flock`. Writes then go on as they did before the turn existed. The lock file
is never removed: a process that removed it could leave two writers holding
locks on two different files of one name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import stat
import threading

from reclaim_tui.errors import LedgerBusyError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows; no turn is taken there
    fcntl = None  # type: ignore[assignment]

__all__ = ["SUFFIX", "WriteTurn", "open_turn"]

#: the lock file's name is the ledger's with this after it (as SQLite's `-wal`)
SUFFIX = "-turn"


def open_turn(path: str, wait: float) -> WriteTurn | None:
    """The turn of the ledger file at `path`, or None where none can be taken.
    The lock file gets the ledger's permissions, so that every user who may
    write the ledger may open it."""
    if fcntl is None or path == ":memory:":
        return None
    try:
        mode = os.stat(path).st_mode & 0o666
    except OSError:
        mode = 0o644
    try:
        fd = os.open(path + SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    except OSError:
        return None
    with contextlib.suppress(OSError):  # made now, under a umask (SQLite's -wal does the same)
        if stat.S_IMODE(os.fstat(fd).st_mode) != mode:
            os.fchmod(fd, mode)
    return WriteTurn(fd, path, wait)


class _Request:
    """One wait handed to the waiting thread."""

    __slots__ = ("future", "gave_up", "got", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> None:
        self.loop = loop
        self.future = future
        #: the caller stopped waiting (set under the turn's guard)
        self.gave_up = False
        #: the thread took the lock for this request (set under the guard)
        self.got = False


class WriteTurn:
    """The exclusive lock on one ledger's turn file, for one connection.

    `take()` then `let_go()`, once each per write transaction; the ledger's
    own asyncio lock keeps one of its transactions at a time, so this object
    never has two takers. `let_go()` may be called from the connection's
    thread (right after its COMMIT) and again from the event loop (after the
    call settled, whatever happened to it): the second call does nothing.

    A lock is held by an open file, not by a thread: the waiting thread's
    `flock` and the loop's share one. So while a wait is still with the
    thread (its caller gone, the lock not yet come), every take waits
    behind it there, never beside it on the loop."""

    def __init__(self, fd: int, path: str, wait: float) -> None:
        self._fd = fd
        self._path = path
        self._wait = wait
        self._held = False
        #: waits handed to the thread and not yet over
        self._pending = 0
        #: guards `_held`, `_pending` and a request's `gave_up` and `got`
        #: between the loop, the connection's thread and the waiting thread
        self._guard = threading.Lock()
        self._requests: queue.SimpleQueue[_Request | None] | None = None
        #: times a take found the turn taken and waited for it (tests, benchmarks)
        self.waits = 0

    async def take(self) -> None:
        """Hold the turn, waiting at most the ledger's busy_timeout for it."""
        assert fcntl is not None
        with self._guard:
            free = not self._pending and _try(self._fd)
            if free:
                self._held = True
        if not free:
            await self._wait_for_it()

    def let_go(self) -> None:
        """Let the next writer have the turn (nothing if it is not held)."""
        assert fcntl is not None
        with self._guard:
            if not self._held:
                return
            self._held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Let go, and close the lock file: at once, or by the waiting thread
        once its waits are over (a descriptor closed under a blocked `flock`
        could be reused for another file before that `flock` returns)."""
        self.let_go()
        if self._requests is not None:
            self._requests.put(None)
        else:
            _close(self._fd)

    async def _wait_for_it(self) -> None:
        self.waits += 1
        loop = asyncio.get_running_loop()
        request = _Request(loop, loop.create_future())
        if self._requests is None:
            self._requests = queue.SimpleQueue()
            name = f"reclaim-tui write turn {os.path.basename(self._path)}"
            threading.Thread(target=self._waiting, name=name, daemon=True).start()
        with self._guard:
            self._pending += 1
        self._requests.put(request)
        try:
            await asyncio.wait_for(asyncio.shield(request.future), self._wait)
        except BaseException as exc:
            with self._guard:
                request.gave_up = True
                if request.got and self._held:
                    # It came just as the caller gave up: let it go.
                    self._held = False
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            if isinstance(exc, TimeoutError):
                raise LedgerBusyError(
                    f"{self._path}: another process kept its turn to write the ledger"
                    f" past busy_timeout ({self._wait:g} s)"
                ) from None
            raise

    def _waiting(self) -> None:
        """The waiting thread: each request's blocking `flock`, in order."""
        assert fcntl is not None and self._requests is not None
        while (request := self._requests.get()) is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except OSError as exc:  # the file cannot be locked (a broken mount)
                with self._guard:
                    self._pending -= 1
                _settle(request, exc)
                continue
            with self._guard:
                self._pending -= 1
                if request.gave_up:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
                    continue
                request.got = True
                self._held = True
            _settle(request, None)
        _close(self._fd)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _try(fd: int) -> bool:
    """Take the lock if nobody holds it; never wait."""
    assert fcntl is not None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _settle(request: _Request, exc: BaseException | None) -> None:
    def settle(future: asyncio.Future[None] = request.future) -> None:
        if future.done():
            return
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
        request.loop.call_soon_threadsafe(settle)
