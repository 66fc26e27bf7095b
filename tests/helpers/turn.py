"""Another process holding a SQLite ledger's write turn, and probes of the
turn (core/ledger/sqlite/turn.py), for tests/unit/test_sqlite_turn*.py."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.ledger import SqliteLedger
from reclaim_tui.core.ledger.sqlite.turn import SUFFIX, WriteTurn

NOW = 1_800_000_000.0

#: holds the turn file named by argv[1] until its standard input closes
_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.read()
    """
)


class Holder:
    """Another process holding the turn of the ledger at `db`."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(db) + SUFFIX],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "held"

    def let_go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=30) == 0
        self._close_pipes()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


async def ledger_at(path: Path, busy_timeout: float = 10.0) -> SqliteLedger:
    ledger = await open_ledger(path, clock=ManualClock(NOW), busy_timeout=busy_timeout)
    assert isinstance(ledger, SqliteLedger)
    return ledger


def turn_of(ledger: SqliteLedger) -> WriteTurn:
    turn = ledger._turn
    assert turn is not None
    return turn


async def until_waiting(turn: WriteTurn, waits: int) -> None:
    """Until the turn has waited `waits` times (a bounded number of turns of
    the loop: the wait starts before the write's first await returns)."""
    for _ in range(1000):
        if turn.waits >= waits:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"the write never waited for its turn ({turn.waits})")


def free(db: Path) -> bool:
    """Whether another process could take the turn of the ledger at `db` now."""
    code = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
        "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "except BlockingIOError:\n    print('taken')\nelse:\n    print('free')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(db) + SUFFIX], capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "free"


def free_here(db: Path) -> bool:
    """The same, asked through a file of this process's own (cheaper: flock
    locks belong to open files, so this one contends as another process's)."""
    fd = os.open(str(db) + SUFFIX, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def fill_fds_below(n: int) -> list[int]:
    """Open /dev/null until the next free descriptor is `n` (so the next
    open gets exactly `n`); the fillers, to close later."""
    fillers: list[int] = []
    while True:
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd >= n:
            os.close(fd)
            return fillers
        fillers.append(fd)
