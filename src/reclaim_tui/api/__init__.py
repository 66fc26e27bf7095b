"""reclaim-tui from Python: open a ledger, submit jobs, run passes with your
own result callback, look jobs up and wait for them, act on them as an
operator, or run the service loop inside an application.

    import reclaim_tui

    async def persist(key: str, result: reclaim_tui.Result) -> None:
        ...  # idempotent by key: it may run again after a crash

    async with reclaim_tui.connect("ledger.db", on_result=persist) as ledger:
        keys = await ledger.submit([{"input": "Summarise RFC 9110"}])
        await ledger.tick()

Async first (`connect`, `Ledger`); `connect_sync` gives the same calls for a
script without an event loop. The settings are the CLI's: what is not passed
comes from the same environment variables (`RECLAIM_DB`, `RECLAIM_BASE_URL`,
`GEMINI_API_KEY`, …). Everything public is in `__all__`; the rest of the
package is private.
"""

from reclaim_tui.api.jobs import Job, Result, Timeline
from reclaim_tui.api.ledger import Ledger, connect
from reclaim_tui.api.sync import SyncLedger, connect_sync
from reclaim_tui.core.models import JobSpec, PassReport, Status
from reclaim_tui.errors import (
    ConfigError,
    JobsFileError,
    LedgerError,
    OperatorError,
    ReclaimError,
)

__all__ = [
    "ConfigError",
    "Job",
    "JobSpec",
    "JobsFileError",
    "Ledger",
    "LedgerError",
    "OperatorError",
    "PassReport",
    "ReclaimError",
    "Result",
    "Status",
    "SyncLedger",
    "Timeline",
    "connect",
    "connect_sync",
]
