"""Waiting for another worker without crashing the console.

Textual raises `WorkerCancelled` into whoever awaits a cancelled worker's
`wait()`, and an unhandled error in a worker ends the app. A cancelled worker
is routine here: a tab pressed before the first page arrives replaces that
page's read (exclusive group), `:ledger` and quitting cancel what is in flight.
"""

from __future__ import annotations

from typing import Any

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
