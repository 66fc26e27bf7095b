"""reclaim-tui: a durable reclaim ledger for Gemini background interactions.

The Python API (`reclaim_tui.api`) is re-exported here and loaded on first
use: `import reclaim_tui` stays as light as a cron tick needs it to be.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reclaim_tui.api import (
        ConfigError,
        Job,
        JobsFileError,
        JobSpec,
        Ledger,
        LedgerError,
        OperatorError,
        PassReport,
        ReclaimError,
        Result,
        Status,
        SyncLedger,
        Timeline,
        connect,
        connect_sync,
    )

__version__ = "0.1.0"
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
    "__version__",
    "connect",
    "connect_sync",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        # By name, not an import statement: the import graph (import-linter) reads
        # `reclaim_tui` as the package every module passes through, and none of
        # them (core above all) may depend on the API through it.
        return getattr(importlib.import_module("reclaim_tui.api"), name)
    raise AttributeError(f"module 'reclaim_tui' has no attribute {name!r}")
