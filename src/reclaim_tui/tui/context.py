"""What a console is started with (built by `launch.make_app`, the CLI's and tests' factory)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.runner.host import EngineHost

__all__ = ["ConsoleConfig"]


@dataclass
class ConsoleConfig:
    settings: Settings
    #: Where the engine runs (not started yet). None: a read-only console, which
    #: never writes and never calls the API.
    host: EngineHost | None = None
    readonly: bool = False
    interval: float = 2.0
    #: The operator typed --interval (a saved pace winning over it is said).
    interval_given: bool = False
    paused: bool = False
    clock: Clock = field(default_factory=SystemClock)
    models: list[str] = field(default_factory=list)
    page_size: int = 100
    #: How often the console looks for changes made by anyone (cron ticks too).
    watch_every: float = 1.0
    subtitle: str = ""
    #: The service's control socket this console is attached to (None: not attached).
    attach: str | None = None
    #: Ask before an action that sends a job again (settings.toml `confirm`).
    confirm: bool = True
    #: Builds the engine host for another ledger's settings (`:ledger`); None
    #: where no engine runs here (read-only, attached).
    host_factory: Callable[[Settings], EngineHost] | None = None
    #: Freeze the objects alive once the screen is up (`gc.freeze`): see
    #: `ReclaimApp.on_main_screen_ready`.
    freeze_gc: bool = True
    #: Said first when the console started a new ledger (a mistyped --db shows
    #: an empty screen otherwise): core/ledger/sqlite/new_ledger.py.
    created_note: str | None = None

    @property
    def files_dir(self) -> Path:
        """Where the console writes exports and screenshots: the ledger's
        directory (the operator chose it; the process's current directory may
        be a checkout), or the home directory when that is not writable."""
        file = ledger_file(self.settings.db)
        if file is None:
            ledger_dir = Path.cwd()  # the ledger is on a server: where the console runs
        else:
            ledger_dir = file.absolute().parent  # as the ledger is opened: `~` is not home
        return ledger_dir if os.access(ledger_dir, os.W_OK) else Path.home()
