"""The service's side of the control socket: it serves attached consoles.

`reclaim-tui run --control PATH` listens on a Unix socket (mode 0600: only
its user may connect); runner/control.py is the console's side and says
what travels on it. The server runs a console's commands on the service's
engine, and asks the service (`ServiceSide`: the loop in runner/service.py
builds this server, never the other way round) for its next pass, its own
state (`ServiceStatus`) and a new pace (`SetPace`: pause/resume, the pass
interval, the API calls in flight, each checked before any is applied).

A service serves at most `MAX_CONSOLES` consoles at once (another is told
so and hung up on), and reads lines of at most `CONTROL_LINE_LIMIT` (an
attached console sends a big submit in parts): what a client of the
socket can make the service hold is bounded. Refusals are said in the
service log, once per cause per minute.

No Textual here (import-linter: runner never imports the console).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import stat
from collections import Counter
from pathlib import Path
from typing import Protocol

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.keys import valid_key
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.core.models import Actor, PassReport
from reclaim_tui.errors import ConfigError, OperatorError, ReclaimError
from reclaim_tui.runner.commands import (
    Failed,
    Message,
    Passed,
    ServiceState,
    ServiceStatus,
    SetPace,
    Started,
    Tick,
    encode,
    is_command,
)
from reclaim_tui.runner.execute import execute
from reclaim_tui.runner.worker import Send, Server

__all__ = [
    "CONTROL_LINE_LIMIT",
    "MAX_CONSOLES",
    "ControlServer",
    "ServiceSide",
    "socket_path_ok",
]

#: Longest line the service reads from a console (a console splits a bigger submit).
CONTROL_LINE_LIMIT = 8 * 1024 * 1024
#: Consoles attached at once.
MAX_CONSOLES = 8
#: Seconds between two lines of the service log about the same kind of refusal.
COMPLAINT_INTERVAL = 60.0


class ServiceSide(Protocol):
    """What the control server asks of the service it runs in."""

    async def next_pass(self) -> PassReport:
        """The report of the service's next pass (this starts none)."""
        ...

    def say(self, event: str, **fields: object) -> None:
        """One line in the service's log."""
        ...

    def state(self) -> ServiceState:
        """How it runs now: up/paused/draining, its pace, its last pass."""
        ...

    def set_pace(self, command: SetPace) -> ServiceState:
        """Pause/resume, the pass interval, the calls in flight (ConfigError:
        a bad value, and nothing changed)."""
        ...


def _job_key(key: object) -> bool:
    return isinstance(key, str) and valid_key(key)


class _ControlSession(Server):
    """One attached console: its Ticks wait for the service's next pass."""

    def __init__(self, engine: Engine, send: Send, loop: ServiceSide) -> None:
        super().__init__(engine.acting_as(Actor.CONSOLE), send)
        self.loop = loop

    async def _execute(self, message: Message) -> Message:
        try:
            if isinstance(message, Tick):
                return Passed(await self.loop.next_pass())
            if isinstance(message, ServiceStatus):
                return self.loop.state()
            if isinstance(message, SetPace):
                return self.loop.set_pace(message)
        except ReclaimError as exc:
            return Failed.of(exc)
        if not is_command(message):
            return Failed.of(ReclaimError(f"unknown engine command {type(message).__name__}"))
        bad = [k for k in getattr(message, "idems", None) or () if not _job_key(k)]
        if bad:
            # From a socket anyone with its permission can write to: a key
            # that is no job key (a path, say) is refused, never looked up.
            return Failed.of(OperatorError(f"refusing {bad[0]!r}: not a job key (a-z 0-9 _ -)"))
        return await execute(self.engine, message)


class ControlServer:
    """Serves attached consoles on a Unix socket while the service runs."""

    def __init__(
        self,
        path: str | Path,
        engine: Engine,
        loop: ServiceSide,
        settings: Settings,
        *,
        max_consoles: int = MAX_CONSOLES,
        line_limit: int = CONTROL_LINE_LIMIT,
    ):
        self.path = Path(path)
        self.engine = engine
        self.loop = loop
        self.settings = settings
        self.max_consoles = max_consoles
        self.line_limit = line_limit
        self.sessions = 0
        self.refused: Counter[str] = Counter()
        self._said: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.AbstractServer | None = None
        self._stop = asyncio.Event()
        self._inode: int | None = None

    async def start(self) -> None:
        """Bind (refusing a path another live service holds), mode 0600."""
        socket_path_ok(self.path)
        await _refuse_live(self.path)
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._session, path=str(self.path), limit=self.line_limit
            )
        except OSError as exc:
            raise ConfigError(f"--control {self.path}: cannot listen: {exc}") from exc
        finally:
            os.umask(old)
        self._inode = self.path.lstat().st_ino

    async def stop(self) -> None:
        """Stop listening, end every session — the commands they run are
        cancelled and awaited, so none outlives the engine closed next —
        and remove the socket (if it is still ours)."""
        self._stop.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=10.0)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        with contextlib.suppress(FileNotFoundError):
            if self._inode is not None and self.path.lstat().st_ino == self._inode:
                self.path.unlink()

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.sessions >= self.max_consoles:
            await self._turn_away(writer)
            return
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.sessions += 1

        async def send(message: Message, ident: int) -> None:
            writer.write(encode(message, ident))
            with contextlib.suppress(ConnectionError):
                await writer.drain()

        try:
            await send(Started(self.engine.owner, _absolute(self.settings).to_wire()), 0)
            await _ControlSession(self.engine, send, self.loop).serve(reader, self._stop)
        except (ConnectionError, ReclaimError):
            pass  # the console went away mid-line: its commands were cancelled
        except asyncio.CancelledError:
            pass  # the service stops (stop() cancelled the session)
        except Exception as exc:  # a line that is not a command: said once, the session ends
            error = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, ValueError) and "limit" in str(exc):  # asyncio's readline
                error = f"a line longer than {self.line_limit} bytes"
            self._complain("bad-line", error[:300])
        finally:
            if task is not None:
                self._tasks.discard(task)
            self.sessions -= 1
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _turn_away(self, writer: asyncio.StreamWriter) -> None:
        """One console too many: told why (its attach fails with it), hung up on."""
        why = f"the service serves {self.max_consoles} consoles already; try again later"
        self._complain("consoles", why)
        with contextlib.suppress(Exception):
            writer.write(encode(Failed.of(ReclaimError(why)), 0))
            await asyncio.wait_for(writer.drain(), 2.0)
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 2.0)

    def _complain(self, cause: str, error: str) -> None:
        """Said in the service log once per cause per COMPLAINT_INTERVAL."""
        self.refused[cause] += 1
        now = self.engine.clock.now()
        if now - self._said.get(cause, -math.inf) < COMPLAINT_INTERVAL:
            return
        self._said[cause] = now
        self.loop.say("control_refused", cause=cause, error=error, refused=self.refused[cause])


def _absolute(settings: Settings) -> Settings:
    """The settings an attaching console reads its ledger and files by: paths
    made absolute (the console may run in another folder)."""
    file = ledger_file(settings.db)
    db = settings.db if file is None else str(file.resolve())
    return settings.with_(db=db, out=str(Path(settings.out).resolve()))


async def _refuse_live(path: Path) -> None:
    """A socket file nobody answers on is a dead service's: removed. A live
    one, or any other kind of file, is refused (never deleted)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ConfigError(f"--control {path}: exists and is not a socket; not touching it")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), 2.0)
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink(missing_ok=True)
        return
    except (OSError, TimeoutError) as exc:
        raise ConfigError(
            f"--control {path}: cannot tell whether a service holds it: {exc}"
        ) from exc
    writer.close()
    raise ConfigError(f"--control {path}: another service is listening there")


def socket_path_ok(path: str | Path) -> Path:
    """Unix socket paths are limited to ~107 bytes (sun_path): say so up front."""
    p = Path(path)
    if len(os.fsencode(p)) >= 104:
        raise ConfigError(f"{p}: too long for a Unix socket path (keep it under 104 bytes)")
    return p
