"""The flags the ledger commands share, each defined once and handed out in
groups, so that a command takes only the flags it uses: `cancel` has no
`--first-poll`, `replay` (which never calls the API) no `--api-key`.

    LEDGER     where the ledger is and how long to wait for its lock
    CREATE     --create: a new ledger beside another one (tick, run, submit, console)
    API        how to reach the Interactions API
    SINK       where finished results are delivered
    PASS       how a pass paces its work over many rows
    SEND       how jobs are sent and first polled
    RECOVER    what happens to orphans (creates whose outcome is unknown)
    POLL       what polling does with vanished or overrunning interactions

`options(*groups)` applies them; `ENGINE` is every group (tick, console).

Every number a flag takes is finite and in a range (`Finite`, click's
IntRange): `nan`, `inf`, a negative or a huge value is refused at the
command line (exit 2) instead of parking jobs forever or hanging a wait.
`bound_numbers` gives any numeric flag still without a range a generous one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import click

from reclaim_tui.config import DEFAULT_DB, DEFAULT_MODEL, DEFAULT_OUT, MAX_LANES
from reclaim_tui.core.ledger.retention import PAID_TIER_DAYS
from reclaim_tui.core.models import TRANSPORTS, GonePolicy, OrphanPolicy

__all__ = [
    "API",
    "CREATE",
    "DAY",
    "ENGINE",
    "LEDGER",
    "PASS",
    "POLL",
    "RECOVER",
    "SEND",
    "SINK",
    "Finite",
    "bound_numbers",
    "options",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

DAY = 86_400.0
#: The most of a --db-file read: a --db (a path, a URL or a libpq string) is far shorter.
MAX_DB_FILE_BYTES = 16 * 1024


class Finite(click.FloatRange):
    """A float in [min, max] (`min_open`: above min) that is a real number:
    `nan` and `inf` are refused with the flag's name (exit 2)."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


def _seconds(high: float, *, positive: bool = False) -> Finite:
    return Finite(0.0, high, min_open=positive)


def bound_numbers(command: click.Command) -> None:
    """Give every numeric flag of `command` (a group: of every command under
    it) that has no range yet a generous one: finite, not negative, at most 10^9
    (a fraction, `--…-rate`, at most 1). A safety net: the flags that matter
    name their own."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            bound_numbers(sub)
        return
    for param in command.params:
        if type(param.type) is click.types.FloatParamType:
            high = 1.0 if (param.name or "").endswith("_rate") else 1e9
            param.type = Finite(0.0, high)
        elif type(param.type) is click.types.IntParamType:
            param.type = click.IntRange(0, 10**9)


def _pg_schema(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--schema` reaches every ledger the process opens (the console's
    engine worker too) as the environment variable the ledger reads."""
    if value:
        os.environ["RECLAIM_PG_SCHEMA"] = value


def _db_file(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """`--db-file`: the ledger's `--db` read from a file, so a password in a
    URL is not on the command line (`ps` shows it to every local user). It
    reaches `--db` (and the console's engine worker) as RECLAIM_DB, which a
    `--db` on the command line overrides."""
    if not value:
        return
    try:
        with open(value, "rb") as f:
            raw = f.read(MAX_DB_FILE_BYTES + 1)
    except OSError as exc:
        raise click.BadParameter(f"cannot read it ({exc.strerror})", ctx, param) from None
    # What is wrong is said, never the content: it may hold a password.
    if b"\0" in raw:
        raise click.BadParameter(
            "it is not text (it holds a NUL byte): it must hold the --db, not be the ledger",
            ctx,
            param,
        )
    if len(raw) > MAX_DB_FILE_BYTES:
        raise click.BadParameter(
            f"it is over {MAX_DB_FILE_BYTES // 1024} KiB: not a --db on one line", ctx, param
        )
    try:
        # utf-8-sig: a byte order mark an editor wrote is not part of the path
        db = raw.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        raise click.BadParameter("it is not UTF-8 text", ctx, param) from None
    if not db or "\n" in db:
        raise click.BadParameter("it must hold the ledger on one line", ctx, param)
    os.environ["RECLAIM_DB"] = db


def _db_and_schema(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn = click.option(
        "--db-file",
        default=None,
        envvar="RECLAIM_DB_FILE",
        expose_value=False,
        is_eager=True,
        callback=_db_file,
        type=click.Path(dir_okay=False),
        help="A file holding --db (one line): keeps a URL's password out of `ps`"
        " (env RECLAIM_DB_FILE; --db given too wins).",
    )(fn)
    fn = click.option(
        "--schema",
        default=None,
        envvar="RECLAIM_PG_SCHEMA",
        expose_value=False,
        callback=_pg_schema,
        help="PostgreSQL: the schema of the ledger's tables (env RECLAIM_PG_SCHEMA; else the"
        " first of the connection's search_path, else reclaim_tui).",
    )(fn)
    return click.option(
        "--db",
        default=DEFAULT_DB,
        show_default=True,
        envvar="RECLAIM_DB",
        help="The ledger: a SQLite file, or a postgresql:// URL or libpq key=value string"
        " (env RECLAIM_DB).",
    )(fn)


_FLAGS: dict[str, Decorator] = {
    "db": _db_and_schema,
    "busy_timeout": click.option(
        "--busy-timeout",
        default=10.0,
        show_default=True,
        type=_seconds(3600),
        help="Seconds to wait for another process's lock on the ledger before giving up.",
    ),
    "base_url": click.option(
        "--base-url",
        default=None,
        envvar="RECLAIM_BASE_URL",
        help="API base URL (the emulator's); omit for the real Gemini API.",
    ),
    "api_key": click.option(
        "--api-key",
        default=None,
        help="API key (else GEMINI_API_KEY / GOOGLE_API_KEY). Never stored.",
    ),
    "request_timeout": click.option(
        "--request-timeout",
        default=30.0,
        show_default=True,
        type=_seconds(3600, positive=True),
        help="Seconds one API call may take before it counts as failed.",
    ),
    "transport": click.option(
        "--transport",
        default="aiohttp",
        show_default=True,
        envvar="RECLAIM_TRANSPORT",
        type=click.Choice(TRANSPORTS),
        help="HTTP transport of API calls: aiohttp under the SDK's httpx API (less CPU"
        " per call), or the SDK's own httpx client.",
    ),
    "emulator_lookup": click.option(
        "--emulator-lookup/--no-emulator-lookup",
        default=False,
        envvar="RECLAIM_EMULATOR_LOOKUP",
        help="Adopt orphans through the emulator's find-by-label admin API.",
    ),
    "out": click.option(
        "--out", default=DEFAULT_OUT, show_default=True, help="Directory of the default sink."
    ),
    "sink": click.option("--sink", default=None, help="module:callable sink instead of --out."),
    "concurrency": click.option(
        "--concurrency",
        default=None,
        type=click.IntRange(1, 1024),
        help="API calls (and sink deliveries) in flight at once (default 16).",
    ),
    "adaptive_concurrency": click.option(
        "--adaptive-concurrency",
        is_flag=True,
        help="Without --concurrency: start at 16 calls in flight and double up to 64 while"
        " the API keeps up (halved on a 429/503). More in flight also means more creates"
        " of unknown outcome when a process is killed.",
    ),
    "lanes": click.option(
        "--lanes",
        default=1,
        show_default=True,
        type=click.IntRange(1, MAX_LANES),
        help="PostgreSQL only: run the send and reclaim passes as this many claim-write"
        " loops at once, each on a server connection of its own, so the server writes one"
        " lane's batch while this process works another's. The calls in flight"
        " (--concurrency) are shared out over the lanes.",
    ),
    "lease_seconds": click.option(
        "--lease-seconds",
        default=None,
        type=_seconds(7 * DAY, positive=True),
        help="Lease length; at least 3 × (request + busy timeout).",
    ),
    "verbose": click.option("-v", "--verbose", is_flag=True, help="Log each pass to stderr."),
    "create_ledger": click.option(
        "--create",
        "create_ledger",
        is_flag=True,
        help="Start a new ledger at --db even though its folder holds another ledger"
        " (without it that is refused as a likely typo; a first ledger needs no flag).",
    ),
    "model": click.option(
        "--model",
        default=DEFAULT_MODEL,
        show_default=True,
        help="Model for jobs that name none.",
    ),
    "max_attempts": click.option(
        "--max-attempts",
        default=5,
        show_default=True,
        type=click.IntRange(1, 1000),
        help="Creates a job may spend (failed or of unknown outcome) before it fails.",
    ),
    "first_poll": click.option(
        "--first-poll",
        default=2.0,
        show_default=True,
        type=_seconds(DAY),
        help="Age of a job at its first poll; later polls at 2x, 4x, 8x … that.",
    ),
    "webhook_url": click.option(
        "--webhook-url",
        default=None,
        envvar="RECLAIM_WEBHOOK_URL",
        help="Send every create with a webhook_config naming this URL (your `reclaim-tui"
        " inbox`, reachable by the API): events wake their rows, polls become a rare"
        " fallback, and an orphan is adopted from the event that names it.",
    ),
    "webhook_poll": click.option(
        "--webhook-poll",
        default=120.0,
        show_default=True,
        type=_seconds(DAY, positive=True),
        help="With --webhook-url: a job's age at its first fallback poll (then 2x, up to"
        " every 30 min).",
    ),
    "orphan_policy": click.option(
        "--orphan-policy",
        type=click.Choice([p.value for p in OrphanPolicy]),
        default=OrphanPolicy.RESUBMIT.value,
        show_default=True,
        help="An orphan nobody can look up: mark it for resend (recorded as a possible"
        " duplicate spend) or hold it for an operator.",
    ),
    "webhook_grace": click.option(
        "--webhook-grace",
        default=900.0,
        show_default=True,
        type=_seconds(30 * DAY),
        help="With --webhook-url: seconds an orphan waits for an event naming it before"
        " --orphan-policy applies (events come when a job ends: set it above your jobs'"
        " usual run time).",
    ),
    "on_gone": click.option(
        "--on-gone",
        type=click.Choice([p.value for p in GonePolicy]),
        default=GonePolicy.RESUBMIT.value,
        show_default=True,
        help="A 404 for a created interaction past --retention-days: resend it (recorded as"
        " a possible duplicate spend) or hold it for an operator. Inside retention a 404 is"
        " polled again for --gone-grace, then held.",
    ),
    "gone_grace": click.option(
        "--gone-grace",
        default=6 * 3600.0,
        show_default=True,
        type=float,
        help="Seconds a job whose interaction answers 404 inside the API's retention is"
        " polled again (with backoff) before it is held for an operator: such a 404 is no"
        " proof of loss (the API once answered 404 for fresh interactions for two days).",
    ),
    "deadline": click.option(
        "--deadline",
        default=None,
        type=_seconds(PAID_TIER_DAYS * DAY, positive=True),
        help="Seconds a submitted job may run before it is cancelled (default: none for"
        " models, 4 h for agents; a job's own 'deadline' wins).",
    ),
    "retention_days": click.option(
        "--retention-days",
        default=PAID_TIER_DAYS,
        show_default=True,
        type=Finite(0.0, 3650.0, min_open=True),
        help="How long the API keeps an interaction (55 paid tier, 1 free tier): submitted"
        " rows older than that are flagged, and only past it does a 404 follow --on-gone.",
    ),
}

LEDGER = ("db", "busy_timeout")
#: The commands that may start a new ledger (tick, run, submit, console).
CREATE = ("create_ledger",)
API = ("base_url", "api_key", "request_timeout", "transport")
SINK = ("out", "sink")
PASS = ("concurrency", "adaptive_concurrency", "lease_seconds", "verbose")
SEND = ("model", "max_attempts", "first_poll", "webhook_url", "webhook_poll")
RECOVER = ("emulator_lookup", "orphan_policy", "webhook_grace")
POLL = ("on_gone", "gone_grace", "retention_days", "deadline")
ENGINE = (*LEDGER, *CREATE, *API, *SINK, *PASS, "lanes", *SEND, *RECOVER, *POLL)


def options(*groups: tuple[str, ...] | str) -> Decorator:
    """A decorator adding these groups' flags (or single flags, by name), each
    once, in the order given (that is the order `--help` lists them)."""
    names: list[str] = []
    for group in groups:
        for name in (group,) if isinstance(group, str) else group:
            if name not in names:
                names.append(name)

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            fn = _FLAGS[name](fn)
        return fn

    return apply
