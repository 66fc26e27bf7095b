"""Shared helpers of the e2e and reliability tiers: real processes, a real ledger
file, the emulator over HTTP, and readers that check the ledger against the
emulator's independent create log."""

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
