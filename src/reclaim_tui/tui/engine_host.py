"""The engine on an event loop of its own, in a thread.

Why a thread: a reclaim pass over thousands of in-flight rows spends real CPU
in the SDK (DESIGN.md §1: several ms per call to build pydantic models) and,
in the demo, in the embedded emulator. On the console's loop that work would
sit between a key press and its repaint. On its own loop the UI only shares
the GIL with it (switched every few ms), never waits for a whole batch.

The console's Textual workers await `EngineHost.call(...)`: the coroutine runs
on the engine's loop and the worker resumes when it is done, so the UI code
keeps the worker/message idiom and never touches the engine's objects from
the wrong loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

from reclaim_tui.core.engine import Engine

__all__ = ["EngineHost", "EngineSetup"]

T = TypeVar("T")
#: Builds the engine on the host's loop; returns it and a teardown coroutine function.
EngineSetup = Callable[[], Awaitable[tuple[Engine, Callable[[], Awaitable[None]]]]]


class EngineHost:
    """Owns a thread running an asyncio loop on which the engine lives."""

    def __init__(self, setup: EngineSetup) -> None:
        self._setup = setup
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="reclaim-engine", daemon=True)
        self._engine: Engine | None = None
        self._teardown: Callable[[], Awaitable[None]] | None = None

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()
        self._loop.close()

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("the engine host is not started")
        return self._engine

    async def start(self) -> Engine:
        """Start the thread and build the engine there (errors propagate)."""
        self._thread.start()
        self._engine, self._teardown = await self._submit(self._setup())
        return self._engine

    async def call(self, fn: Callable[[Engine], Awaitable[T]]) -> T:
        """Run `fn(engine)` on the engine's loop and await its result here."""
        return await self._submit(fn(self.engine))

    async def _submit(self, coro: Awaitable[T]) -> T:
        async def wrapped() -> T:
            return await coro

        future = asyncio.run_coroutine_threadsafe(wrapped(), self._loop)
        # Cancelling the awaiting worker cancels the task on the engine loop too.
        return await asyncio.wrap_future(future)

    async def stop(self) -> None:
        """Cancel what still runs there, tear the engine down, end the thread."""
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._teardown is not None:
                await self._teardown()

        with contextlib.suppress(Exception):
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(shutdown(), self._loop))
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join, 10.0)
