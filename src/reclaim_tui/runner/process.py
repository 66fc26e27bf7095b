"""`ProcessHost`: the console's engine in a child process (worker.py).

Why a process: a reclaim pass over a thousand in-flight jobs spends most of
its time in Python — the SDK's pydantic models, JSON, in the demo the
emulator. In a thread of the console's process that work holds the GIL in
slices, and a key press waits behind them (the slowest keys by far with
many jobs in flight). In a child it has a GIL of its own; the console only
reads its one-line JSON replies.

The protocol is JSON lines over the child's stdin/stdout (commands.py's
codec); requests carry an id, replies come back in completion order. The
first line is a `Launch`: the settings, and which function opens the
engine ("module:function", bootstrap's by default; the demo names its own).
The API key travels in the child's environment, never in a line or on the
command line: it never appears in a process listing. The child dies with
the console (stdin EOF, SIGTERM, PR_SET_PDEATHSIG); `stop` also waits for
it and kills it if it lingers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import os
import sys
from collections.abc import Mapping
from typing import Any

from reclaim_tui.config import Settings
from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.commands import (
    LINE_LIMIT,
    Abort,
    Command,
    Failed,
    Launch,
    Message,
    Quit,
    Reply,
    Started,
    decode,
    encode,
    is_reply,
)
from reclaim_tui.runner.host import EngineHost

__all__ = ["DEFAULT_OPENER", "WORKER", "ProcessHost"]

#: Opens the engine in the child unless the launch names another opener.
DEFAULT_OPENER = "reclaim_tui.bootstrap:open_engine"
#: The child's module (`python -m`).
WORKER = "reclaim_tui.runner.worker"
#: Seconds the child gets to cancel its pass and close the ledger on quit.
STOP_GRACE = 5.0
#: Restarts of a worker that died, in a row without a reply in between; past
#: that the console says why and stops trying (a worker that cannot live).
MAX_RESTARTS = 3


class ProcessHost(EngineHost):
    """Runs engine commands in `python -m reclaim_tui.runner.worker`.

    The child calls `opener(settings, actor=ACTOR, **args)` for its engine;
    `args` must be JSON values.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        opener: str = DEFAULT_OPENER,
        args: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.opener = opener
        self.args = dict(args or {})
        self.owner: str | None = None
        #: The settings as the worker parsed them (without the key).
        self.worker_settings: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Message]] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._tasks: list[asyncio.Task[None]] = []
        self._gone: str | None = None
        #: Times the worker died and was started again (the console shows it).
        self.restarts = 0
        self.last_death: str | None = None
        self._restarts_in_a_row = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.settings.api_key:
            env["GEMINI_API_KEY"] = self.settings.api_key
        return env

    async def _start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            WORKER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._environment(),
            limit=LINE_LIMIT,
        )
        self._tasks = [
            asyncio.create_task(self._read_replies()),
            asyncio.create_task(self._read_stderr()),
        ]
        launch = Launch(self.settings, self.opener, self.args, tuple(sys.path))
        started: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[0] = started
        await self._write(launch)
        try:
            reply = await started
            if isinstance(reply, Failed):
                raise reply.exception()
            if not isinstance(reply, Started):
                raise ReclaimError(f"engine worker: {type(reply).__name__} in reply to Launch")
        except BaseException:
            await self.stop()
            raise
        self.owner = reply.owner
        self.worker_settings = reply.settings

    @property
    def alive(self) -> bool:
        """False once the worker is known to have exited."""
        return self._proc is not None and self._gone is None

    async def _request(self, command: Command) -> Reply:
        assert self._proc is not None
        if self._gone is not None:
            await self._restart()
        ident = next(self._ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            try:
                await self._write(command, ident)
            except ReclaimError:
                # Died before the command reached it (nothing of it ran): once
                # the reader has seen the exit, the command goes to a new worker.
                self._waiting.pop(ident, None)
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await asyncio.wait_for(asyncio.shield(self._tasks[0]), STOP_GRACE)
                if self._gone is None:
                    raise
                return await self._request(command)
            reply = await future
        except asyncio.CancelledError:
            if self._gone is None and self._proc.stdin is not None:
                # The console's worker was cancelled: so is the command (no await
                # here, the line is queued and goes out with the next drain).
                with contextlib.suppress(Exception):
                    self._proc.stdin.write(encode(Abort(ident)))
            raise
        finally:
            self._waiting.pop(ident, None)
        if not is_reply(reply):
            raise ReclaimError(f"engine worker: {type(reply).__name__} in reply to {command}")
        self._restarts_in_a_row = 0
        return reply

    async def _restart(self) -> None:
        """Start a new worker after the old one died (OOM-killed, crashed): its
        leases are a dead holder's, free at once; commands in flight when it
        died failed with the reason, the next ones go to the new worker."""
        reason = self._gone or "engine worker gone"
        if self._restarts_in_a_row >= MAX_RESTARTS:
            raise ReclaimError(f"{reason}; not restarted again ({MAX_RESTARTS} restarts in a row)")
        self._restarts_in_a_row += 1
        self.restarts += 1
        self.last_death = reason
        await self.stop()
        self._gone = None
        self._waiting.clear()
        self._stderr.clear()
        await self._start()

    async def _write(self, message: Message, ident: int = 0) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(encode(message, ident))
        try:
            await self._proc.stdin.drain()
        except ConnectionError as exc:
            raise ReclaimError(self._gone or f"engine worker unreachable: {exc}") from exc

    async def _read_replies(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        while line := await stdout.readline():
            ident, reply = decode(line)
            future = self._waiting.get(ident)
            if future is not None and not future.done():
                future.set_result(reply)
        code = await self._proc.wait()
        tail = " | ".join(self._stderr) or "no output"
        self._gone = f"engine worker exited (code {code}): {tail}"
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ReclaimError(self._gone))

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        while line := await self._proc.stderr.readline():
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self._stderr.append(text[:300])

    async def stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(Exception):
                assert proc.stdin is not None
                proc.stdin.write(encode(Quit()))
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.gather(*self._tasks), 1.0)
