"""Shared helpers of the e2e and reliability tiers: real processes, a real ledger
file, the emulator over HTTP, and readers that check the ledger against the
emulator's independent create log.

The names below are imported on first use (PEP 562), not with the package: the
recording sink (`--sink tests.helpers.sinks:record`) is imported by every CLI
process of the suite, and importing this package used to pull in the emulator
(aiohttp, PyJWT, cryptography: ~0.5 s of CPU a process) that no CLI process uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.helpers.emulator import EmulatorProcess
    from tests.helpers.figures import record_figures
    from tests.helpers.ledgerdb import LedgerView
    from tests.helpers.procs import Workspace, clean_env, run_cli

__all__ = [
    "EmulatorProcess",
    "LedgerView",
    "Workspace",
    "clean_env",
    "record_figures",
    "run_cli",
]

_WHERE = {
    "EmulatorProcess": "tests.helpers.emulator",
    "record_figures": "tests.helpers.figures",
    "LedgerView": "tests.helpers.ledgerdb",
    "Workspace": "tests.helpers.procs",
    "clean_env": "tests.helpers.procs",
    "run_cli": "tests.helpers.procs",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value
