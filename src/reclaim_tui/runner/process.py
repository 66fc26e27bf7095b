"""`ProcessHost`: the console's engine in a child process (worker.py).

Why a process: a reclaim pass over a thousand in-flight jobs spends most of
its time in Python — the SDK's pydantic models, JSON, in the demo the
emulator. In a thread of the console's process that work holds the GIL in
slices of several ms, and a key press waits behind them (p99 ≈ 150 ms at
1,000 in flight). In a child it has a GIL of its own; the console only
reads its one-line JSON replies.

The protocol is JSON lines over the child's stdin/stdout (asyncio subprocess
streams); requests carry an id, replies come back in completion order.
Settings travel in the first line, the API key in the child's environment:
neither ever appears in a process listing. The child dies with the console
(stdin EOF, SIGTERM, PR_SET_PDEATHSIG); `stop` also waits for it and kills
it if it lingers.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from reclaim_tui.config import Settings
from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.commands import Command, Reply, raise_for
from reclaim_tui.runner.host import EngineHost
from reclaim_tui.runner.worker import LINE_LIMIT

__all__ = ["DemoSpec", "ProcessHost"]

#: Seconds the child gets to cancel its pass and close the ledger on quit.
STOP_GRACE = 5.0


@dataclass(frozen=True)
class DemoSpec:
    """The demo's world, built in the child: emulator, seeded jobs, flaky sink."""

    jobs: int
    seed: int
    latency: tuple[float, float]


class ProcessHost(EngineHost):
    """Runs engine commands in `python -m reclaim_tui.runner.worker`."""

    def __init__(self, settings: Settings, *, demo: DemoSpec | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.demo = demo
        self.owner: str | None = None
        #: The settings as the worker parsed them (without the key).
        self.worker_settings: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Reply]] = {}
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._tasks: list[asyncio.Task[None]] = []
        self._gone: str | None = None

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
            "reclaim_tui.runner.worker",
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
        launch: dict[str, Any] = {
            "settings": self.settings.to_wire(),
            "path": sys.path,
            "demo": None,
        }
        if self.demo is not None:
            launch["demo"] = {
                "jobs": self.demo.jobs,
                "seed": self.demo.seed,
                "latency": list(self.demo.latency),
            }
        started: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[0] = started
        await self._write(launch)
        try:
            reply = raise_for(await started)
        except BaseException:
            await self.stop()
            raise
        self.owner = str(reply.get("owner"))
        self.worker_settings = reply.get("settings", {})

    async def _request(self, command: Command) -> Reply:
        assert self._proc is not None
        if self._gone is not None:
            raise ReclaimError(self._gone)
        ident = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        try:
            await self._write({"id": ident, **command})
            return await future
        except asyncio.CancelledError:
            if self._gone is None and self._proc.stdin is not None:
                # The console's worker was cancelled: so is the command (no await
                # here, the line is queued and goes out with the next drain).
                with contextlib.suppress(Exception):
                    self._proc.stdin.write(b'{"op":"abort","target":%d}\n' % ident)
            raise
        finally:
            self._waiting.pop(ident, None)

    async def _write(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        try:
            await self._proc.stdin.drain()
        except ConnectionError as exc:
            raise ReclaimError(self._gone or f"engine worker unreachable: {exc}") from exc

    async def _read_replies(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        while line := await stdout.readline():
            reply = json.loads(line)
            future = self._waiting.get(int(reply.pop("id", -1)))
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
                proc.stdin.write(b'{"op":"quit"}\n')
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), STOP_GRACE)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.gather(*self._tasks), 1.0)
