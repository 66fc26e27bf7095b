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
busy_timeout raises LedgerBusyError, as a lock held that long does (a writer
that takes no turn may then keep SQLite's lock as long again). It is taken
on the event loop without blocking when it is free; when it is not, a daemon
thread of the ledger's own waits for it (a process may exit while it
waits), and a turn that came after its caller gave up (cancelled, or timed
out) is let go at once. Each take gets a ticket, and only its ticket lets
go: a late let-go (a transaction's thread, after its caller moved on)
cannot free a later transaction's turn.

The lock file is opened as SQLite opens its `-wal`: beside the ledger's
real file (every symbolic link in the ledger's path followed, as SQLite
follows them to place its `-wal` and `-shm`, so that processes reaching one
ledger by different paths take one turn), made with the ledger's
permissions (and, by root, given the ledger's owner), never through a
symbolic link itself, and only a regular file is used; one this user may only read
is locked through a read-only open. A process forked while it holds a turn
(without exec) closes its copy in the child, so the turn goes with the
parent. No turn is taken where there is no file to lock: a read-only ledger,
one in memory, a folder where the lock file cannot be made, a file system
where `flock` fails, a system without it. Writes then go on as they did
before the turn existed. The lock file is never removed: a process that
removed it could leave two writers holding locks on two different files of
one name.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import queue
import stat
import threading
import weakref

from reclaim_tui.core.ledger.identity import TURN_SUFFIX
from reclaim_tui.errors import LedgerBusyError, LedgerError

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows; no turn is taken there
    fcntl = None  # type: ignore[assignment]

__all__ = ["SUFFIX", "WriteTurn", "open_turn"]

#: the lock file's name is the ledger's with this after it (as SQLite's `-wal`)
SUFFIX = TURN_SUFFIX

#: every turn this process has open, closed in a child forked without exec
_OPEN: weakref.WeakSet[WriteTurn] = weakref.WeakSet()


def open_turn(path: str, wait: float) -> WriteTurn | None:
    """The turn of the ledger file at `path`, or None where none can be taken."""
    if fcntl is None or path in ("", ":memory:"):
        return None
    real = os.path.realpath(path)
    try:
        ledger = os.stat(real)
        mode, owner = stat.S_IMODE(ledger.st_mode) & 0o666, (ledger.st_uid, ledger.st_gid)
    except OSError:
        mode, owner = 0o644, None
    fd = _open_lock_file(real + SUFFIX, mode, owner)
    if fd is None:
        return None
    try:  # a file system where flock fails (NFS without its lock daemon, some FUSE mounts)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # another writer holds it: the lock works
    except OSError:
        _close(fd)
        return None
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
    return WriteTurn(fd, path, wait, real + SUFFIX)


def _open_lock_file(name: str, mode: int, owner: tuple[int, int] | None) -> int | None:
    """The lock file's descriptor: made now with the ledger's mode (whatever
    the umask) and, by root, its owner, as SQLite makes its `-wal`; or the
    regular file already there, read-write or else read-only (flock needs
    only an open file). Never through a symbolic link, never a FIFO or a
    device; None where it cannot be had."""
    flags = os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(name, flags | os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode)
        if owner is not None and os.geteuid() == 0:
            with contextlib.suppress(OSError):
                os.fchown(fd, *owner)
        return fd
    for access in (os.O_RDWR, os.O_RDONLY):
        try:
            # O_NONBLOCK: a FIFO in its place must not block the open
            fd = os.open(name, flags | access | os.O_NONBLOCK)
        except PermissionError:
            continue
        except OSError:
            return None  # a symbolic link (ELOOP), or gone meanwhile
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            _close(fd)
            return None
        return fd
    return None


class _Request:
    """One wait handed to the waiting thread."""

    __slots__ = ("future", "gave_up", "got", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[int]) -> None:
        self.loop = loop
        self.future = future
        #: the caller stopped waiting (set under the turn's guard)
        self.gave_up = False
        #: the ticket the thread took the lock with for this request (under the guard)
        self.got = 0


class WriteTurn:
    """The exclusive lock on one ledger's turn file, for one connection.

    `take()` then `let_go(ticket)`, once each per write transaction; the
    ledger's own asyncio lock keeps one of its transactions at a time, so
    this object never has two takers. `let_go` may be called from the
    connection's thread (right after its COMMIT) and again from the event
    loop (after the call settled, whatever happened to it): only the first
    call with the ticket that holds the turn lets go.

    A lock is held by an open file, not by a thread: the waiting thread's
    `flock` and the loop's share one. So while a wait is still with the
    thread (its caller gone, the lock not yet come), every take waits
    behind it there, never beside it on the loop."""

    def __init__(self, fd: int, path: str, wait: float, lock_file: str) -> None:
        self._fd = fd
        self._path = path
        #: the lock file's name, for its errors (the ledger's real file's)
        self._lock_file = lock_file
        self._wait = wait
        #: the ticket of the take that holds the turn; 0: not held
        self._held = 0
        self._tickets = itertools.count(1)
        self._closed = False
        #: waits handed to the thread and not yet over
        self._pending = 0
        #: guards `_held`, `_closed`, `_pending` and a request's `gave_up` and
        #: `got` between the loop, the connection's thread and the waiting thread
        self._guard = threading.Lock()
        self._requests: queue.SimpleQueue[_Request | None] | None = None
        #: times a take found the turn taken and waited for it (tests, benchmarks)
        self.waits = 0
        _OPEN.add(self)

    async def take(self) -> int:
        """Hold the turn, waiting at most the ledger's busy_timeout for it;
        the ticket that lets go of it."""
        with self._guard:
            if self._closed:
                raise LedgerError(f"{self._path}: the ledger was closed")
            if not self._pending and self._try():
                self._held = next(self._tickets)
                return self._held
        return await self._wait_for_it()

    def let_go(self, ticket: int) -> None:
        """Let the next writer have the turn, if `ticket` holds it."""
        with self._guard:
            self._let_go_unguarded(ticket)

    def close(self) -> None:
        """Let go, and close the lock file: at once, or by the waiting thread
        once its waits are over (a descriptor closed under a blocked `flock`
        could be reused for another file before that `flock` returns). A
        second close does nothing; a take after it is refused."""
        with self._guard:
            if self._closed:
                return
            self._let_go_unguarded(self._held)
            self._closed = True
            requests = self._requests
        _OPEN.discard(self)
        if requests is not None:
            requests.put(None)
        else:
            _close(self._fd)

    def _try(self) -> bool:
        """Take the lock if nobody holds it; never wait."""
        assert fcntl is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            raise self._failed(exc) from exc
        return True

    def _failed(self, exc: OSError) -> LedgerError:
        return LedgerError(f"{self._lock_file}: the turn's lock failed ({exc})")

    async def _wait_for_it(self) -> int:
        self.waits += 1
        loop = asyncio.get_running_loop()
        request = _Request(loop, loop.create_future())
        if self._requests is None:
            requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
            name = f"reclaim-tui write turn {os.path.basename(self._path)}"
            thread = threading.Thread(target=self._waiting, args=(requests,), name=name)
            thread.daemon = True
            try:
                thread.start()
            except RuntimeError as exc:  # a limit on threads: the next wait tries again
                raise LedgerBusyError(
                    f"{self._path}: no thread to wait for the turn to write ({exc})"
                ) from exc
            self._requests = requests
        with self._guard:
            self._pending += 1
        self._requests.put(request)
        try:
            return await asyncio.wait_for(asyncio.shield(request.future), self._wait)
        except BaseException as exc:
            with self._guard:
                request.gave_up = True
                self._let_go_unguarded(request.got)  # it came just as the caller gave up
            if isinstance(exc, TimeoutError):
                raise LedgerBusyError(
                    f"{self._path}: another process kept its turn to write the ledger"
                    f" past busy_timeout ({self._wait:g} s)"
                ) from None
            raise

    def _let_go_unguarded(self, ticket: int) -> None:
        """`let_go`, the guard already held."""
        assert fcntl is not None
        if ticket and ticket == self._held and not self._closed:
            self._held = 0
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def _waiting(self, requests: queue.SimpleQueue[_Request | None]) -> None:
        """The waiting thread: each request's blocking `flock`, in order;
        the lock file is closed here, after the last."""
        assert fcntl is not None
        while (request := requests.get()) is not None:
            failure: BaseException | None = None
            with self._guard:
                closed = self._closed
            if not closed:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX)
                except OSError as exc:
                    failure = self._failed(exc)
            with self._guard:
                self._pending -= 1
                if failure is None and not closed:
                    if request.gave_up or self._closed:
                        fcntl.flock(self._fd, fcntl.LOCK_UN)
                    else:
                        request.got = self._held = next(self._tickets)
                if request.gave_up:
                    continue  # nobody waits for its answer
                if failure is None and not request.got:
                    failure = LedgerError(f"{self._path}: the ledger was closed")
            _settle(request, request.got, failure)
        _close(self._fd)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _settle(request: _Request, ticket: int, exc: BaseException | None) -> None:
    def settle(future: asyncio.Future[int] = request.future) -> None:
        # `gave_up` is set on the loop too: a caller gone meanwhile reads no
        # answer (an exception set then would be logged as never retrieved)
        if future.done() or request.gave_up:
            return
        if exc is None:
            future.set_result(ticket)
        else:
            future.set_exception(exc)

    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
        request.loop.call_soon_threadsafe(settle)


def _forget_in_child() -> None:
    """In a child forked without exec: close this process's copies of the
    lock files (never unlock: the lock is the parent's), so that a turn goes
    with the process that took it."""
    for turn in list(_OPEN):
        turn._guard = threading.Lock()  # another thread may have held it at the fork
        turn._closed, turn._held, turn._requests = True, 0, None
        _close(turn._fd)
    _OPEN.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
