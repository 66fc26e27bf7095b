"""A running service's control socket, and the console's host attached to it.

`reclaim-tui run --control PATH` listens on a Unix socket (runner/control_server.py).
A console started with `--attach PATH` runs no loop
and no engine of its own: `AttachedHost` sends the same commands the
console's worker takes (commands.py, JSON lines), and the service runs them
on its engine — one process, one SDK client, one ledger connection.

    console → service              service → console
    (on connect)                   Started(owner, settings)   id 0
    Tick                           Passed(report of the service's next pass)
    Retry · Cancel · Adopt …       their replies, as from the worker
    ServiceStatus                  ServiceState(up/paused/draining, pace, last pass)
    SetPace(paused, interval, …)   ServiceState, or Failed(ConfigError) for a bad value

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
from collections.abc import Sequence
from pathlib import Path

from reclaim_tui.core.chains import chain_order
from reclaim_tui.core.models import JobSpec, PassReport
from reclaim_tui.errors import ConfigError, ReclaimError
from reclaim_tui.runner.commands import (
    LINE_LIMIT,
    Abort,
    Command,
    Failed,
    Message,
    Quit,
    Reply,
    ServiceState,
    ServiceStatus,
    SetPace,
    Started,
    Submit,
    decode,
    encode,
    is_reply,
)
from reclaim_tui.runner.control_server import CONTROL_LINE_LIMIT, socket_path_ok
from reclaim_tui.runner.host import EngineHost

__all__ = ["AttachedHost", "service_settings"]


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
        # A part's `previous` jobs go in an earlier part: each part is checked alone.
        for part in _parts(chain_order(jobs), send, CONTROL_LINE_LIMIT // 2):
            report.merge(await super().submit(part, send=send))
        return report

    async def status(self) -> ServiceState:
        """The service's own state; ReclaimError when it is gone (or stopping)."""
        return await self._service(ServiceStatus())

    async def set_pace(
        self,
        *,
        paused: bool | None = None,
        interval: float | None = None,
        concurrency: int | None = None,
    ) -> ServiceState:
        """Pause/resume the service, set its pass interval or its calls in
        flight; ConfigError (from the service) for a value it refuses."""
        return await self._service(SetPace(paused, interval, concurrency))

    async def _service(self, message: ServiceStatus | SetPace) -> ServiceState:
        await self._started.wait()
        if self._start_error is not None:
            raise ReclaimError(f"not attached: {self._start_error}")
        reply = await self._send(message)
        if isinstance(reply, Failed):
            raise reply.exception()
        if not isinstance(reply, ServiceState):
            raise ReclaimError(f"service: {type(reply).__name__} in reply to {message}")
        return reply

    async def _request(self, command: Command) -> Reply:
        reply = await self._send(command)
        if not is_reply(reply):
            raise ReclaimError(f"service: {type(reply).__name__} in reply to {command}")
        return reply

    async def _send(self, command: Message) -> Message:
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
