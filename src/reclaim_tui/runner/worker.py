"""The console's engine worker: `python -m reclaim_tui.runner.worker`.

Started by `ProcessHost` (process.py) with pipes for stdin and stdout. The
first stdin line is a `Launch` (settings without the API key, which comes in
the environment, never on a command line; and the "module:function" that
opens the engine); it answers `Started` or `Failed` with id 0, then serves
one command per line (commands.py), each as a task of its own, and answers
with the command's id in completion order.

It dies with the console: stdin at EOF (the console quit, or died and the
kernel closed its pipe) or a SIGTERM — also sent by the kernel when the
parent dies (PR_SET_PDEATHSIG, Linux) — cancels what runs and closes the
ledger. A cancelled pass is safe to cut short: its leases expire with this
process. Ctrl+C belongs to the console, so SIGINT is ignored here.

No Textual here (a test checks): the worker starts fast and small.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import importlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.errors import ConfigError, ReclaimError
from reclaim_tui.runner.commands import (
    ACTOR,
    LINE_LIMIT,
    Abort,
    Failed,
    Launch,
    Message,
    Quit,
    Started,
    decode,
    encode,
    is_command,
)
from reclaim_tui.runner.execute import execute, stop_registered

__all__ = ["main", "open_launch"]

_PR_SET_PDEATHSIG = 1

Send = Callable[[Message, int], Awaitable[None]]


def open_launch(launch: Launch) -> AbstractAsyncContextManager[Engine]:
    """Call the launch's opener: `opener(settings, actor=ACTOR, **args)`."""
    # The console's import path, so a `--sink module:callable` resolves alike.
    sys.path.extend(p for p in launch.path if p not in sys.path)
    module_name, _, name = launch.opener.partition(":")
    try:
        opener: Any = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ConfigError(f"engine opener {launch.opener!r}: {exc}") from exc
    context: AbstractAsyncContextManager[Engine] = opener(
        launch.settings, actor=ACTOR, **launch.args
    )
    return context


class Server:
    """Runs each command as a task; `Abort` cancels one, EOF or `Quit` ends all."""

    def __init__(self, engine: Engine, send: Send) -> None:
        self.engine = engine
        self.send = send
        self.tasks: dict[int, asyncio.Task[None]] = {}

    async def serve(self, reader: asyncio.StreamReader, stop: asyncio.Event) -> None:
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while True:
                line_task = asyncio.ensure_future(reader.readline())
                await asyncio.wait({line_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not line_task.done():
                    line_task.cancel()
                    return
                line = line_task.result()
                if not line:
                    return  # the console is gone
                ident, message = decode(line)
                if isinstance(message, Quit):
                    return
                self.dispatch(ident, message)
        finally:
            stopping.cancel()
            for task in self.tasks.values():
                task.cancel()
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    def dispatch(self, ident: int, message: Message) -> None:
        if isinstance(message, Abort):
            task = self.tasks.get(message.target)
            if task is not None:
                task.cancel()
            return
        task = asyncio.ensure_future(self.run(ident, message))
        self.tasks[ident] = task
        task.add_done_callback(lambda _: self.tasks.pop(ident, None))

    async def run(self, ident: int, message: Message) -> None:
        try:
            reply = await self._execute(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug, not a refusal: the console shows it
            reply = Failed.of(exc)
        await self.send(reply, ident)

    async def _execute(self, message: Message) -> Message:
        if not is_command(message):
            return Failed.of(ReclaimError(f"unknown engine command {type(message).__name__}"))
        return await execute(self.engine, message)


async def _pipes() -> tuple[asyncio.StreamReader, Send]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # Replies get stdout's descriptor to themselves; a stray print goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(message: Message, ident: int) -> None:
        writer.write(encode(message, ident))
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    return reader, send


def _die_with_parent(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if parent == 1 or os.getppid() != parent:
        stop.set()  # the parent died before the signal was armed


def _launch(line: bytes) -> Launch:
    _, message = decode(line)
    if not isinstance(message, Launch):
        raise ReclaimError(f"engine worker: expected a Launch, got {type(message).__name__}")
    return message


async def amain() -> int:
    """0 when the console is done with the engine, 2 when it could not start."""
    stop = asyncio.Event()
    _die_with_parent(stop)
    reader, send = await _pipes()
    first = await reader.readline()
    if not first:
        return 0
    started = False
    try:
        launch = _launch(first)
        async with open_launch(launch) as engine:
            started = True
            # The settings as this side understood them (the console checks).
            await send(Started(engine.owner, launch.settings.to_wire()), 0)
            await Server(engine, send).serve(reader, stop)
            await stop_registered(engine)  # the console closed it: a clean exit
    except Exception as exc:
        if started:
            raise
        await send(Failed.of(exc), 0)  # a bad key, an unusable ledger …
        return 2
    return 0


#: How much lower than the console the engine worker runs (`nice`): on a busy
#: machine the scheduler then gives a core to the operator's key press before
#: the loop's next batch. The engine still gets its share (nice 5 weighs about
#: a third of nice 0 under contention, nothing at all is taken when the CPU
#: is idle): leases of tens of seconds are not at risk.
ENGINE_NICE = 5


def main() -> None:
    with contextlib.suppress(OSError, AttributeError):  # not on every platform
        os.nice(ENGINE_NICE)
    sys.exit(asyncio.run(amain()))


if __name__ == "__main__":
    main()
