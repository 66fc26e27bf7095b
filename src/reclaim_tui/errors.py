"""The exception tree of reclaim-tui.

    ReclaimError                    base of everything raised on purpose
    ├── ConfigError                 bad flags/settings, missing API key (exit 2)
    ├── JobsFileError               a jobs file with bad lines; nothing reserved (exit 3)
    ├── LedgerError                 the ledger file cannot be used (exit 4)
    │   ├── LedgerVersionError      written by a newer reclaim-tui
    │   ├── LedgerCorruptError      not a SQLite database / malformed
    │   ├── LedgerForeignError      a SQLite file of something else: refused untouched
    │   ├── LedgerBusyError         locked by another process past busy_timeout
    │   │   └── LedgerFullError     no room on the disk (a service waits for room)
    │   ├── LedgerConflictError     a write a uniqueness rule refused (e.g. a handle already used)
    │   ├── LedgerAccessError       the database server refused the connection for good
    │   │                           (password, pg_hba.conf, TLS files): not waited for
    │   └── LedgerReadOnlyError     a write was needed but the file is read-only
    │       └── LedgerPermissionError   the database role lacks a grant (names it)
    ├── OperatorError               an operator action that does not apply (exit 5)
    ├── OutputError                 a file a command writes cannot be written (exit 4)
    ├── SinkError                   a sink could not deliver a result (row stays `done`)
    │   └── SinkFolderError         its temp folder is a link or not its own (exit 4)
    └── BackendError                the API could not be used for one call
        ├── NotCreatedError         create was definitely not accepted
        ├── MaybeCreatedError       create may have been accepted (timeout, 5xx, reset)
        ├── TransientReadError      get/cancel failed for a reason worth retrying
        ├── InteractionGoneError    get/cancel answered 404
        └── PermanentReadError      get/cancel refused for good (other 4xx)

Exit codes of the CLI are derived from this tree in `cli.EXIT_CODES`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "OUTSIDE_CAUSES",
    "BackendError",
    "ConfigError",
    "InteractionGoneError",
    "JobsFileError",
    "LedgerAccessError",
    "LedgerBusyError",
    "LedgerConflictError",
    "LedgerCorruptError",
    "LedgerError",
    "LedgerForeignError",
    "LedgerFullError",
    "LedgerPermissionError",
    "LedgerReadOnlyError",
    "LedgerVersionError",
    "MaybeCreatedError",
    "NotCreatedError",
    "OperatorError",
    "OutputError",
    "PermanentReadError",
    "ReclaimError",
    "SinkError",
    "SinkFolderError",
    "TransientReadError",
]


class ReclaimError(Exception):
    """Base class of every error reclaim-tui raises on purpose."""


class ConfigError(ReclaimError):
    """Settings or flags that cannot work together, or a missing API key."""


class JobsFileError(ReclaimError):
    """A jobs file that failed validation; `problems` names every bad line."""

    def __init__(self, source: str, problems: list[tuple[int, str]]) -> None:
        self.source = source
        self.problems = problems
        # Line 0 stands for the file as a whole (it could not be read): no
        # line is bad, the file is not there (or not readable); said so.
        if problems and all(n == 0 for n, _ in problems):
            super().__init__(f"{'; '.join(why for _, why in problems)}; nothing was reserved")
            return
        lines = "\n".join(f"  line {n}: {why}" if n else f"  {why}" for n, why in problems[:50])
        more = f"\n  … and {len(problems) - 50} more" if len(problems) > 50 else ""
        what = "bad line(s)" if any(n for n, _ in problems) else "problem(s)"
        super().__init__(f"{source}: {len(problems)} {what}, nothing was reserved:\n{lines}{more}")


class LedgerError(ReclaimError):
    """The ledger file cannot be opened or written."""

    #: the pass's report so far, when the error ended a pass (a PassReport)
    report: Any = None


class LedgerVersionError(LedgerError):
    """The ledger was written by a newer reclaim-tui (higher schema version)."""


class LedgerCorruptError(LedgerError):
    """The file is not a SQLite database or is malformed."""


class LedgerForeignError(LedgerError):
    """A SQLite file that is not a reclaim-tui ledger; nothing in it was changed."""


class LedgerBusyError(LedgerError):
    """Another process held the write lock for longer than busy_timeout."""


class LedgerUnavailableError(LedgerBusyError):
    """The database server cannot be reached now (down, restarting, the
    connection lost): the statement was not applied, or rolled back."""


class LedgerFullError(LedgerBusyError):
    """The disk under the ledger (or its database server's) is full: the write
    was not applied; it can go on once there is room."""


class LedgerAccessError(LedgerError):
    """The database server (or its pooler) refused this connection for a
    reason that waiting does not mend: a wrong password, a pg_hba.conf
    rule, a TLS file missing or not trusted, a role or database that does
    not exist. A server not up yet is LedgerUnavailableError instead."""


class LedgerConflictError(LedgerError):
    """A write that a uniqueness rule of the ledger refused (a handle already used)."""


class LedgerReadOnlyError(LedgerError):
    """The ledger file (or its directory) cannot be written."""


class LedgerPermissionError(LedgerReadOnlyError):
    """The database role lacks a right a statement needs; the message names
    the statement, the role and the grant."""


class OperatorError(ReclaimError):
    """An operator action that does not apply to the row (wrong status, unknown key)."""


class OutputError(ReclaimError):
    """A file a command writes whole (`export -o`) could not be written: no
    room, the disk erring, no permission; nothing new is left under its name."""


class SinkError(ReclaimError):
    """A sink failed to deliver a result; the row stays `done` for replay."""


class SinkFolderError(SinkError):
    """The directory sink's temp folder is a link, not a folder, or not this
    user's: the sink writes and deletes there, so it stops (the pass, the
    command) rather than touch files it did not make."""


#: Causes of a failed call that lie outside the job: they never spend the
#: job's attempts, never mark it failed, and count toward the circuit breaker.
OUTSIDE_CAUSES = ("auth", "transport", "rate_limit", "capacity", "server")


class BackendError(ReclaimError):
    """One API call failed. `status` is the HTTP status when there was one.

    `cause` is set when the failure lies outside the job (one of
    OUTSIDE_CAUSES: the key was refused, the network failed, the API is
    rate limiting, at capacity or erring); None means the job's own request
    was refused or the cause is unknown. `retry_after` is the API's
    Retry-After in seconds, when it sent one.
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        cause: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.cause = cause
        self.retry_after = retry_after

    @property
    def outside(self) -> bool:
        return self.cause is not None


class NotCreatedError(BackendError):
    """The create request was definitely not accepted.

    `retryable` is False for requests the API will never accept (400 and the
    like): the row goes to `failed` at once instead of burning attempts.
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        *,
        retryable: bool,
        cause: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status, cause=cause, retry_after=retry_after)
        self.retryable = retryable


class MaybeCreatedError(BackendError):
    """The create may have been accepted: timeout, 5xx, reset after sending."""


class TransientReadError(BackendError):
    """A get or cancel failed in a way worth retrying later (timeout, 5xx, 429)."""


class InteractionGoneError(BackendError):
    """The API answered 404 for this interaction id."""


class PermanentReadError(BackendError):
    """A get or cancel was refused for good (a 4xx other than 404/408/409/429)."""
