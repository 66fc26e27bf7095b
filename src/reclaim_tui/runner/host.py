"""Where the console's engine runs: the interface, and the in-thread host.

The console never holds the engine itself. It asks an `EngineHost` for a
pass or an operator action (commands.py) and awaits the answer from a
Textual worker, so a reclaim pass never runs on the UI's event loop:

    ProcessHost (process.py)    real backends (console, demo): the engine in a
                                child process. Its CPU — the SDK's pydantic
                                models, in the demo the emulator — no longer
                                shares the UI's GIL.
    ThreadHost (here)           an injected backend (tests' FakeBackend, which
                                cannot cross a process): the engine on an event
                                loop of its own, in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar

from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.models import JobSpec, PassReport
from reclaim_tui.errors import ReclaimError
from reclaim_tui.runner.commands import (
    Command,
    Failed,
    Passed,
    Prune,
    Pruned,
    Recover,
    Replay,
    Reply,
    RowCommand,
    RowsOutcome,
    Submit,
    Tick,
)
from reclaim_tui.runner.execute import execute, stop_registered

__all__ = ["EngineHost", "EngineOpener", "ThreadHost"]

T = TypeVar("T")
#: Opens the engine (and closes what it opened on exit) on the host's loop.
EngineOpener = Callable[[], AbstractAsyncContextManager[Engine]]


class EngineHost(ABC):
    """Runs engine commands somewhere other than the UI's loop.

    The console paints before the engine is up (a worker process takes a
    second to import the SDK): a command sent meanwhile waits for the start.
    """

    def __init__(self) -> None:
        self._started = asyncio.Event()
        self._start_error: BaseException | None = None

    async def start(self) -> None:
        """Build the engine; a ReclaimError (bad key, unusable ledger) propagates."""
        try:
            await self._start()
        except BaseException as exc:
            self._start_error = exc
            raise
        finally:
            self._started.set()

    async def request(self, command: Command) -> Reply:
        """Run one command and return its reply (commands.py)."""
        await self._started.wait()
        if self._start_error is not None:
            raise ReclaimError(f"the engine did not start: {self._start_error}")
        return await self._request(command)

    @abstractmethod
    async def _start(self) -> None: ...

    @abstractmethod
    async def _request(self, command: Command) -> Reply: ...

    @abstractmethod
    async def stop(self) -> None:
        """Cancel what still runs, close the engine; idempotent."""

    # -- typed helpers over `request` -----------------------------------------------------
    async def _expect(self, command: Command, kind: type[T]) -> T:
        reply = await self.request(command)
        if isinstance(reply, Failed):
            raise reply.exception()
        if not isinstance(reply, kind):
            raise ReclaimError(f"engine error: {type(reply).__name__} in reply to {command}")
        return reply

    async def tick(self, interval: float | None = None, *, paused: bool = False) -> PassReport:
        """A pass of the loop that runs one every `interval` s (paused: none,
        the registry told so; core/ledger/registry.py)."""
        return (await self._expect(Tick(interval, paused), Passed)).report

    async def rows(self, command: RowCommand) -> RowsOutcome:
        """Retry, Cancel or Adopt; refusals come back per row."""
        return await self._expect(command, RowsOutcome)

    async def recover(self, idems: Sequence[str]) -> PassReport:
        return (await self._expect(Recover(tuple(idems)), Passed)).report

    async def replay(self, idems: Sequence[str] | None) -> PassReport:
        """Replay now (force): the given done rows, or every done row."""
        command = Replay(None if idems is None else tuple(idems))
        return (await self._expect(command, Passed)).report

    async def submit(self, jobs: Sequence[JobSpec], *, send: bool) -> PassReport:
        return (await self._expect(Submit(tuple(jobs), send), Passed)).report

    async def prune(
        self,
        statuses: Sequence[str],
        older_than_s: float,
        archive: str | None,
        at: float | None = None,
    ) -> dict[str, Any]:
        """Delete old terminal rows (core/ledger/prune.py); the report as JSON (ISO times)."""
        command = Prune(tuple(statuses), older_than_s, archive, at)
        return (await self._expect(command, Pruned)).report


class ThreadHost(EngineHost):
    """The engine on an asyncio loop of its own, in a daemon thread.

    Commands run there with `run_coroutine_threadsafe`; cancelling the
    awaiting worker cancels the command's task on the engine loop too.
    """

    def __init__(self, opener: EngineOpener) -> None:
        super().__init__()
        self._opener = opener
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="reclaim-engine", daemon=True)
        self._engine: Engine | None = None
        self._context: AbstractAsyncContextManager[Engine] | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        self._loop.close()

    async def _start(self) -> None:
        self._thread.start()
        context = self._opener()
        self._engine = await self._submit(context.__aenter__())
        self._context = context

    async def _request(self, command: Command) -> Reply:
        assert self._engine is not None
        return await self._submit(execute(self._engine, command))

    async def _submit(self, coro: Coroutine[Any, Any, T]) -> T:
        async def wrapped() -> T:
            return await coro

        future = asyncio.run_coroutine_threadsafe(wrapped(), self._loop)
        return await asyncio.wrap_future(future)

    async def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._engine is not None:
                await stop_registered(self._engine)
            if self._context is not None:
                await self._context.__aexit__(None, None, None)

        with contextlib.suppress(Exception):
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(shutdown(), self._loop))
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join, 10.0)
