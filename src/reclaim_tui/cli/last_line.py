"""A service's last line: `run` ends with a `stopped` JSON line in its log
(or on stderr), whatever ends it — drained, cancelled, or an error at start
or mid-run — with the exit code, the error and what to do about it. A
supervisor (or whoever reads `--log` later) finds why it stopped without
the stderr that systemd may have rotated away."""

from __future__ import annotations

import json
import os
import time
from typing import TextIO

from reclaim_tui.cli.common import exit_code
from reclaim_tui.errors import (
    ConfigError,
    JobsFileError,
    LedgerAccessError,
    LedgerError,
    LedgerPermissionError,
    LedgerReadOnlyError,
    LedgerUnavailableError,
    LedgerVersionError,
    ReclaimError,
)

__all__ = ["say_stopped"]

#: What to do, by the kind of error (the first that matches).
_HINTS: tuple[tuple[type[BaseException], str], ...] = (
    (LedgerAccessError, "fix the connection settings the error names, then start it again"),
    (
        LedgerPermissionError,
        "an administrator grants what the error names (README: PostgreSQL, roles), or"
        " the owner role runs `reclaim-tui grants --role <app role> --apply`; a pending"
        " migration is the owner role's `reclaim-tui upgrade`",
    ),
    (LedgerVersionError, "a newer reclaim-tui wrote this ledger: upgrade this one"),
    (LedgerReadOnlyError, "the ledger cannot be written: its file, directory or role"),
    (LedgerUnavailableError, "the database server could not be reached"),
    (LedgerError, "the ledger cannot be used as the error says; nothing was lost"),
    (JobsFileError, "fix the jobs file's lines named; nothing was reserved"),
    (ConfigError, "fix the flag or setting named"),
)


def say_stopped(out: TextIO, exc: BaseException) -> None:
    """The `stopped` line of a service that `exc` ended."""
    if isinstance(exc, ReclaimError):
        code = exit_code(exc)
        hint = next((h for kind, h in _HINTS if isinstance(exc, kind)), "")
    elif isinstance(exc, KeyboardInterrupt):
        code, hint = 130, "interrupted"
    else:
        code, hint = 1, "an unexpected error: the traceback is on stderr; please report it"
    line = {
        "at": round(time.time(), 3),
        "event": "stopped",
        "pid": os.getpid(),
        "code": code,
        "error": str(exc) or type(exc).__name__,
        "hint": hint,
    }
    try:
        print(json.dumps(line, separators=(",", ":")), file=out, flush=True)
    except (OSError, ValueError):
        pass  # the log itself failed (a full disk, closed): stderr still has the error
