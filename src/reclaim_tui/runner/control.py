"""A running service's control socket, and the console's host attached to it.

`reclaim-tui run --control PATH` listens on a Unix socket (mode 0600: only
its user may connect). A console started with `--attach PATH` runs no loop
and no engine of its own: `AttachedHost` sends the same commands the
console's worker takes (commands.py, JSON lines), and the service runs them
on its engine — one process, one SDK client, one ledger connection.

    console → service              service → console
    (on connect)                   Started(owner, settings)   id 0
    Tick                           Passed(report of the service's next pass)
    Retry · Cancel · Adopt …       their replies, as from the worker

A service serves at most `MAX_CONSOLES` consoles at once (another is told
so and hung up on), and reads lines of at most `CONTROL_LINE_LIMIT` (an
attached console sends a big submit in parts): what a client of the
socket can make the service hold is bounded. Refusals are said in the
service log, once per cause per minute.

A `Tick` does not start a pass: it waits for the service's next one (the
service keeps its own schedule) and returns that pass's report, so the
console's log shows what the service did. Operator commands are recorded
with actor `console`, as in the console's own engine; the service's passes
stay `service`. A service that stops fails the commands in flight with the
reason; the console says so and the next command connects again.

No Textual here (import-linter: runner never imports the console).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.ledger.urls import is_database_url
from reclaim_tui.core.models import Actor, JobSpec, PassReport
from reclaim_tui.errors import ConfigError, ReclaimError
from reclaim_tui.runner.commands import (
    LINE_LIMIT,
    Abort,
    Command,
    Failed,
    Message,
    Passed,
    Quit,
    Reply,
    Started,
    Submit,
    Tick,
    decode,
    encode,
    execute,
    is_command,
    is_reply,
)
from reclaim_tui.runner.host import EngineHost
from reclaim_tui.runner.worker import Send, Server

if TYPE_CHECKING:
    from reclaim_tui.runner.service import ServiceLoop

__all__ = [
    "CONTROL_LINE_LIMIT",
    "MAX_CONSOLES",
    "AttachedHost",
    "ControlServer",
    "service_settings",
    "socket_path_ok",
]

#: Longest line the service reads from a console (a console splits a bigger submit).
CONTROL_LINE_LIMIT = 8 * 1024 * 1024
#: Consoles attached at once.
MAX_CONSOLES = 8
#: Seconds between two lines of the service log about the same kind of refusal.
COMPLAINT_INTERVAL = 60.0


class _ControlSession(Server):
    """One attached console: its Ticks wait for the service's next pass."""

    def __init__(self, engine: Engine, send: Send, loop: ServiceLoop) -> None:
        super().__init__(engine.acting_as(Actor.CONSOLE), send)
        self.loop = loop

    async def _execute(self, message: Message) -> Message:
        if isinstance(message, Tick):
            try:
                return Passed(await self.loop.next_pass())
            except ReclaimError as exc:
                return Failed.of(exc)
        if not is_command(message):
            return Failed.of(ReclaimError(f"unknown engine command {type(message).__name__}"))
        return await execute(self.engine, message)


class ControlServer:
    """Serves attached consoles on a Unix socket while the service runs."""

    def __init__(
        self,
        path: str | Path,
        engine: Engine,
        loop: ServiceLoop,
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
    db = settings.db if is_database_url(settings.db) else str(Path(settings.db).resolve())
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


#: Seconds an attaching console waits for the service's first line.
HELLO_TIMEOUT = 10.0


async def _hello(reader: asyncio.StreamReader) -> Started:
    line = await reader.readline()
    if not line:
        raise ReclaimError("the service closed the connection")
    _, hello = decode(line)
    if isinstance(hello, Failed):
        raise hello.exception()
    if not isinstance(hello, Started):
        raise ReclaimError(f"{type(hello).__name__} instead of Started")
    return hello


async def service_settings(path: str | Path) -> dict[str, object]:
    """The settings a service at `path` runs with (its first line), then hang up."""
    host = AttachedHost(path)
    await host.start()
    try:
        return host.service_settings
    finally:
        await host.stop()


class AttachedHost(EngineHost):
    """The console's host when attached to a service's control socket."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.owner: str | None = None
        #: The service's settings (without the key), as it sent them.
        self.service_settings: dict[str, object] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Message]] = {}
        self._reading: asyncio.Task[None] | None = None
        self._gone: str | None = None
        self._gone_why = "stopped"

    @property
    def alive(self) -> bool:
        return self._writer is not None and self._gone is None

    async def _start(self) -> None:
        socket_path_ok(self.path)
        try:
            reader, self._writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.path), limit=LINE_LIMIT), 5.0
            )
        except (OSError, TimeoutError) as exc:
            raise ConfigError(
                f"--attach {self.path}: no service there ({exc}); start one with"
                f" `reclaim-tui run --control {self.path}`"
            ) from exc
        try:
            hello = await asyncio.wait_for(_hello(reader), HELLO_TIMEOUT)
        except BaseException as exc:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            if isinstance(exc, TimeoutError):
                raise ReclaimError(
                    f"--attach {self.path}: no answer from the service in {HELLO_TIMEOUT:g} s"
                    " (stopped? overloaded?)"
                ) from exc
            if isinstance(exc, ReclaimError | asyncio.CancelledError):
                raise
            raise ReclaimError(f"--attach {self.path}: not a reclaim-tui service: {exc}") from exc
        self._gone = None
        self.owner = hello.owner
        self.service_settings = dict(hello.settings)
        self._reading = asyncio.create_task(self._read_replies(reader))

    async def submit(self, jobs: Sequence[JobSpec], *, send: bool) -> PassReport:
        """In parts of at most half the service's line limit, the reports merged."""
        report = PassReport()
        for part in _parts(jobs, send, CONTROL_LINE_LIMIT // 2):
            report.merge(await super().submit(part, send=send))
        return report

    async def _request(self, command: Command) -> Reply:
        if self._gone is not None:
            await self.stop()
            await self._start()  # the service came back (or this fails with why)
        assert self._writer is not None
        ident = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            self._writer.write(encode(command, ident))
            try:
                await self._writer.drain()
            except ConnectionError as exc:
                raise ReclaimError(f"the service at {self.path} is gone: {exc}") from exc
            reply = await future
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._writer.write(encode(Abort(ident)))
            raise
        finally:
            self._waiting.pop(ident, None)
        if not is_reply(reply):
            raise ReclaimError(f"service: {type(reply).__name__} in reply to {command}")
        return reply

    async def _read_replies(self, reader: asyncio.StreamReader) -> None:
        self._gone_why = "stopped"
        try:
            while line := await reader.readline():
                ident, reply = decode(line)
                future = self._waiting.get(ident)
                if future is not None and not future.done():
                    future.set_result(reply)
        except ConnectionError:
            pass
        except Exception as exc:  # a reply this console cannot read (a newer service?)
            self._gone_why = f"sent what this console cannot read ({type(exc).__name__}: {exc})"
        self._gone = f"the service at {self.path} {self._gone_why}"
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ReclaimError(self._gone))

    async def stop(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.write(encode(Quit()))
                writer.close()
                await asyncio.wait_for(writer.wait_closed(), 2.0)
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reading
            self._reading = None


def _parts(jobs: Sequence[JobSpec], send: bool, budget: int) -> list[list[JobSpec]]:
    """`jobs` cut into runs whose Submit line stays under `budget` bytes (a
    job bigger than that goes alone: the service says it is too long)."""
    parts: list[list[JobSpec]] = [[]]
    size = 0
    for job in jobs:
        cost = len(encode(Submit((job,), send)))
        if parts[-1] and size + cost > budget:
            parts.append([])
            size = 0
        parts[-1].append(job)
        size += cost
    return [part for part in parts if part] or [[]]


def socket_path_ok(path: str | Path) -> Path:
    """Unix socket paths are limited to ~107 bytes (sun_path): say so up front."""
    p = Path(path)
    if len(os.fsencode(p)) >= 104:
        raise ConfigError(f"{p}: too long for a Unix socket path (keep it under 104 bytes)")
    return p
