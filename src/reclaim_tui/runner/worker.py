"""The console's engine worker: `python -m reclaim_tui.runner.worker`.

Started by `ProcessHost` (process.py) with pipes for stdin and stdout.
The first stdin line is the launch (`{"settings": {...}, "demo": null}`, no
API key: that comes in the environment, never on a command line); it answers
`{"id": 0, "ok": true, "owner": ...}` or an error reply, then serves one
JSON command per line (commands.py), each as a task of its own, and
answers `{"id": n, ...}` in completion order.

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
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from reclaim_tui.bootstrap import open_engine
from reclaim_tui.config import Settings
from reclaim_tui.core.engine import Engine
from reclaim_tui.runner.commands import ACTOR, Command, error_reply, execute

__all__ = ["LINE_LIMIT", "main"]

#: Longest JSON line either side accepts (a 500-job submit chunk of big prompts).
LINE_LIMIT = 64 * 1024 * 1024
_PR_SET_PDEATHSIG = 1

Send = Callable[[dict[str, Any]], Awaitable[None]]


@asynccontextmanager
async def open_launch(launch: dict[str, Any]) -> AsyncIterator[Engine]:
    settings = Settings.from_wire(launch["settings"])
    # The console's import path, so a `--sink module:callable` resolves alike.
    sys.path.extend(p for p in launch.get("path", []) if p not in sys.path)
    demo = launch.get("demo")
    if demo:
        from reclaim_tui.emulator.demo import open_demo_engine

        latency = (float(demo["latency"][0]), float(demo["latency"][1]))
        async with open_demo_engine(settings, demo["jobs"], demo["seed"], latency) as engine:
            yield engine
    else:
        async with open_engine(settings, actor=ACTOR) as engine:
            yield engine


class Server:
    """Runs each command as a task; `abort` cancels one, EOF or `quit` ends all."""

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
                command: Command = json.loads(line)
                if command.get("op") == "quit":
                    return
                self.dispatch(command)
        finally:
            stopping.cancel()
            for task in self.tasks.values():
                task.cancel()
            await asyncio.gather(*self.tasks.values(), return_exceptions=True)

    def dispatch(self, command: Command) -> None:
        ident = int(command.get("id", -1))
        if command.get("op") == "abort":
            task = self.tasks.get(int(command.get("target", -1)))
            if task is not None:
                task.cancel()
            return
        task = asyncio.ensure_future(self.run(ident, command))
        self.tasks[ident] = task
        task.add_done_callback(lambda _: self.tasks.pop(ident, None))

    async def run(self, ident: int, command: Command) -> None:
        try:
            reply = await execute(self.engine, command)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug, not a refusal: the console shows it
            reply = error_reply(exc)
        await self.send({"id": ident, **reply})


async def _pipes() -> tuple[asyncio.StreamReader, Send]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    # Replies get stdout's descriptor to themselves; a stray print goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(message: dict[str, Any]) -> None:
        writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
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


async def amain() -> int:
    stop = asyncio.Event()
    _die_with_parent(stop)
    reader, send = await _pipes()
    first = await reader.readline()
    if not first:
        return 0
    started = False
    try:
        launch = json.loads(first)
        async with open_launch(launch) as engine:
            started = True
            # The settings as this side understood them (the console checks).
            echo = Settings.from_wire(launch["settings"]).to_wire()
            await send({"id": 0, "ok": True, "owner": engine.owner, "settings": echo})
            await Server(engine, send).serve(reader, stop)
    except Exception as exc:
        if started:
            raise
        await send({"id": 0, **error_reply(exc)})  # a bad key, an unusable ledger …
        return 2
    return 0


def main() -> None:
    sys.exit(asyncio.run(amain()))


if __name__ == "__main__":
    main()
