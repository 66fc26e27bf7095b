"""What every command module shares: running an async command and turning a
ReclaimError into its message and exit code (the codes: cli/__init__.py), the
settings a command's flags make, a pass's report, `--json`, a key's prefix.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Coroutine
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reclaim_tui.config import Settings
from reclaim_tui.core.backend import NoApi
from reclaim_tui.core.ledger.opening import require_folder
from reclaim_tui.core.models import (
    GonePolicy,
    JobSpec,
    OrphanPolicy,
    PassReport,
)
from reclaim_tui.errors import (
    ConfigError,
    JobsFileError,
    LedgerError,
    OperatorError,
    OutputError,
    ReclaimError,
    SinkFolderError,
)

if TYPE_CHECKING:
    from reclaim_tui.core.ledger.port import Ledger

__all__ = [
    "EXIT_API_UNAVAILABLE",
    "EXIT_CODES",
    "NoApi",
    "count_of",
    "echo_json",
    "exit_code",
    "guarded",
    "json_option",
    "print_report",
    "read_jobs",
    "reader_settings",
    "require_folder",
    "resolve_key",
    "run",
    "settings_from",
]


#: The API was unreachable or refused us: the circuit breaker stopped the pass.
EXIT_API_UNAVAILABLE = 6

EXIT_CODES: dict[type[ReclaimError], int] = {
    ConfigError: 2,
    JobsFileError: 3,
    LedgerError: 4,
    OperatorError: 5,
    OutputError: 4,
    SinkFolderError: 4,
}

T = TypeVar("T")


def exit_code(exc: ReclaimError) -> int:
    for kind, code in EXIT_CODES.items():
        if isinstance(exc, kind):
            return code
    return 1


def run(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command; turn ReclaimErrors into a message and an exit code."""

    @wraps(coro_fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        import asyncio  # here: an idle tick ends before it needs an event loop

        return asyncio.run(coro_fn(*args, **kwargs))

    return guarded(wrapper)


def guarded(fn: Callable[..., T]) -> Callable[..., T]:
    """A command whose ReclaimErrors become a message and an exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return fn(*args, **kwargs)
        except ReclaimError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exit_code(exc))

    return wrapper


def settings_from(kw: dict[str, Any]) -> Settings:
    if kw.pop("verbose", False):
        import logging  # only when asked for: an idle tick never logs

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    policy = OrphanPolicy(kw.pop("orphan_policy", OrphanPolicy.RESUBMIT.value))
    gone = GonePolicy(kw.pop("on_gone", GonePolicy.RESUBMIT.value))
    settings = Settings(orphan_policy=policy, on_gone=gone, **kw).validate()
    require_folder(settings.db)
    return settings


def reader_settings(db: str) -> Settings:
    """Settings of a command that only reads the ledger at `db`."""
    require_folder(db)
    return Settings(db=db)


def read_jobs(path: str, settings: Settings) -> list[JobSpec]:
    """The jobs of `path` ('-': stdin); a stdin that cannot be read (closed,
    `<&-`, or opened for writing only) is a JobsFileError, as a file is."""
    from reclaim_tui.core.jobsfile import read_jobs_file, read_jobs_stream

    if path != "-":
        return read_jobs_file(path, default_model=settings.model)
    # Python sets sys.stdin to None when the process starts with fd 0 closed.
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise JobsFileError("<stdin>", [(0, "cannot read <stdin>: it is closed")])
    try:
        return read_jobs_stream(stream, source="<stdin>", default_model=settings.model)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise JobsFileError("<stdin>", [(0, f"cannot read <stdin>: {reason}")]) from exc


def print_report(
    report: PassReport,
    fail_on_errors: bool,
    settings: Settings | None = None,
    *,
    summary: str | None = None,
    as_json: bool = False,
    extra: dict[str, Any] | None = None,
) -> None:
    """A pass's report on stdout (a line, or one JSON document); its row
    errors and an API outage on stderr, with their exit codes either way."""
    if as_json:
        from reclaim_tui.core.export import report_record

        echo_json(report_record(report, **(extra or {})))
    else:
        click.echo(summary or report.summary())
    for idem, message in report.errors[:20]:
        click.echo(f"  {idem}: {message}", err=True)
    if report.unavailable is not None:
        cause, message = report.unavailable
        hint = f"; the key came from {_key_source(settings)}" if cause == "auth" else ""
        click.echo(f"error: API unreachable or refusing us ({cause}): {message}{hint}", err=True)
        sys.exit(EXIT_API_UNAVAILABLE)
    if fail_on_errors and report.counts["errors"]:
        sys.exit(1)


def echo_json(document: Any) -> None:
    """One JSON document on stdout (times in it are ISO-8601 UTC strings)."""
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))


#: `--json` of the commands that print one result (a document on stdout).
json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document on stdout (times as ISO-8601 UTC); errors stay on stderr.",
)


def _key_source(settings: Settings | None) -> str:
    """Where the API key came from (never the key itself)."""
    if settings is not None and settings.api_key:
        return "--api-key"
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        if os.environ.get(name):
            return f"${name}"
    return "nowhere: no key was given (the emulator's default was used)"


#: The keys an ambiguous prefix's refusal names.
_NAMED = 5


async def resolve_key(ledger: Ledger, idem: str) -> str:
    idem = idem.strip()
    if not idem:
        raise OperatorError("the key is empty: give a job's key or a unique prefix of it")
    if await ledger.get(idem) is not None:
        return idem
    # One more than is named: whether others match beyond those named is
    # known without counting every key of a short prefix.
    matches = await ledger.find(idem, limit=_NAMED + 1)
    if len(matches) == 1:
        return matches[0].idem
    if not matches:
        raise OperatorError(f"no job with key {idem}")
    named = ", ".join(m.idem for m in matches[:_NAMED])
    if len(matches) > _NAMED:
        raise OperatorError(f"{idem} is ambiguous (more than {_NAMED} keys): {named} and more")
    raise OperatorError(f"{idem} is ambiguous ({len(matches)} keys): {named}")


def count_of(n: int, word: str) -> str:
    """'1 row', '2 rows' (the CLI's counts; "1 rows" read as a bug)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
