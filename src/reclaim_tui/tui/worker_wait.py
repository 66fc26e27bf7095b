"""Waiting for another worker without crashing the console.

Textual raises `WorkerCancelled` into whoever awaits a cancelled worker's
`wait()`, and an unhandled error in a worker ends the app. A cancelled worker
is routine here: a tab pressed before the first page arrives replaces that
page's read (exclusive group), `:ledger` and quitting cancel what is in flight.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.app import App
from textual.message_pump import MessagePump
from textual.worker import Worker, WorkerCancelled


async def finished(worker: Worker[Any]) -> bool:
    """Wait for `worker`; False if it was cancelled instead of finishing.

    A worker that *failed* still raises `WorkerFailed`: that is a bug to see,
    and Textual has already reported it."""
    try:
        await worker.wait()
    except WorkerCancelled:
        return False
    return True


async def painted(app: App[Any], node: MessagePump) -> None:
    """Return once `node` has handled the messages queued on it now and the screen
    has been painted after them. Awaited inside a worker, it keeps that worker busy
    until then (what waits for the console to settle waits for it too), where a bare
    `call_after_refresh` would leave nothing to wait for."""
    done = asyncio.Event()
    node.call_later(app.call_after_refresh, done.set)
    await done.wait()
