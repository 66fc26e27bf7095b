"""The thin CLI: parses flags, builds the engine (bootstrap.py), calls the core, prints.

Exit codes (see README):
    0  success (a tick whose rows recorded errors still exits 0 unless
       --fail-on-errors; the errors are in the rows and on stderr)
    1  unexpected error, or row errors with --fail-on-errors
    2  bad flags or settings, missing API key
    3  jobs file refused (every bad line named; nothing reserved)
    4  ledger unusable (newer schema, corrupt, locked past busy timeout, read-only,
       not a reclaim-tui ledger, its folder missing)
    5  operator action refused (unknown key, wrong status, row held by a live process)
    6  API unreachable or refusing us (a refused key, network down, rate limited, at
       capacity): the circuit breaker stopped the pass; no job was failed for it
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import click

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.cli_costs import costs
from reclaim_tui.cli_options import (
    API,
    DAY,
    ENGINE,
    LEDGER,
    PASS,
    POLL,
    RECOVER,
    SEND,
    SINK,
    Finite,
    bound_numbers,
    options,
)
from reclaim_tui.config import Settings
from reclaim_tui.core.engine import cancelling
from reclaim_tui.core.export import (
    export_record,
    iso_time,
    job_record,
    report_record,
    row_dict,
    write_export,
)
from reclaim_tui.core.jobsfile import read_jobs_file, read_jobs_stream
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.prune import (
    DEFAULT_BATCH,
    PruneCount,
    count_prunable,
    prunable_statuses,
)
from reclaim_tui.core.ledger.prune import parse_age as prune_age
from reclaim_tui.core.ledger.prune import prune as prune_rows
from reclaim_tui.core.ledger.queries import ConsoleReader
from reclaim_tui.core.ledger.retention import Attention, attention
from reclaim_tui.core.ledger.urls import is_database_url, shown_db
from reclaim_tui.core.ledger.views import View
from reclaim_tui.core.models import (
    Actor,
    GonePolicy,
    JobSpec,
    OrphanPolicy,
    PassReport,
    RemoteInteraction,
    Row,
    Status,
)
from reclaim_tui.inbox import DEFAULT_PATH, GOOGLE_JWKS_URL

if TYPE_CHECKING:
    from reclaim_tui.core.gemini.webhooks import WebhookAdmin
from reclaim_tui.errors import (
    BackendError,
    ConfigError,
    JobsFileError,
    LedgerError,
    OperatorError,
    ReclaimError,
)

__all__ = ["EXIT_API_UNAVAILABLE", "EXIT_CODES", "cli", "main"]

#: The API was unreachable or refused us: the circuit breaker stopped the pass.
EXIT_API_UNAVAILABLE = 6

EXIT_CODES: dict[type[ReclaimError], int] = {
    ConfigError: 2,
    JobsFileError: 3,
    LedgerError: 4,
    OperatorError: 5,
}

T = TypeVar("T")


def _exit_code(exc: ReclaimError) -> int:
    for kind, code in EXIT_CODES.items():
        if isinstance(exc, kind):
            return code
    return 1


def run(coro_fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run an async command; turn ReclaimErrors into a message and an exit code."""

    @wraps(coro_fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        try:
            return asyncio.run(coro_fn(*args, **kwargs))
        except ReclaimError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(_exit_code(exc))

    return wrapper


def settings_from(kw: dict[str, Any]) -> Settings:
    if kw.pop("verbose", False):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    policy = OrphanPolicy(kw.pop("orphan_policy", OrphanPolicy.RESUBMIT.value))
    gone = GonePolicy(kw.pop("on_gone", GonePolicy.RESUBMIT.value))
    settings = Settings(orphan_policy=policy, on_gone=gone, **kw).validate()
    _require_folder(settings.db)
    return settings


def _reader_settings(db: str) -> Settings:
    """Settings of a command that only reads the ledger at `db`."""
    _require_folder(db)
    return Settings(db=db)


def _require_folder(db: str) -> None:
    """A LedgerError (exit 4) naming the ledger's folder when it is missing.

    SQLite says only "unable to open database file" for a path whose folder
    does not exist; the CLI does not create folders (a typo in --db should
    not leave a tree of empty directories behind).
    """
    if is_database_url(db):
        return  # a server's database: nothing on this machine to check
    folder = Path(db).parent
    if not folder.exists():
        raise LedgerError(
            f"{db}: the folder {folder} does not exist (create it, or pick another --db)"
        )
    if not folder.is_dir():
        raise LedgerError(f"{db}: {folder} is not a folder")


class _NoApi:
    """The Backend of a command that never calls the API (replay, retry): it needs
    no key, and a call through it is a bug, raised as one (not a BackendError,
    which would pass for an API outage)."""

    supports_lookup = False

    async def create(self, spec: JobSpec, idem: str) -> RemoteInteraction:
        raise self._called("create")

    async def get(self, handle: str) -> RemoteInteraction:
        raise self._called("get")

    async def cancel(self, handle: str) -> RemoteInteraction:
        raise self._called("cancel")

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        raise self._called("find_by_label")

    async def aclose(self) -> None:
        return None

    @staticmethod
    def _called(call: str) -> RuntimeError:
        return RuntimeError(f"{call}: this command must not call the API")


def _read_jobs(path: str, settings: Settings) -> list[JobSpec]:
    if path == "-":
        return read_jobs_stream(sys.stdin.buffer, source="<stdin>", default_model=settings.model)
    return read_jobs_file(path, default_model=settings.model)


def _report(
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
        _echo_json(report_record(report, **(extra or {})))
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


def _echo_json(document: Any) -> None:
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


class _LazyGroup(click.Group):
    """A group whose heavier commands are imported only when named (or listed by
    --help): `reclaim-tui emulator` pulls in aiohttp, cryptography and PyJWT, half of
    an idle tick's start-up when every command imported it (issue 27)."""

    lazy: ClassVar[dict[str, str]] = {"emulator": "reclaim_tui.emulator.command:emulator"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=_LazyGroup, invoke_without_command=True)
@click.version_option(package_name="reclaim-tui")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """reclaim-tui: fire background Gemini jobs, exit, and never lose a result."""
    if ctx.invoked_subcommand is None:
        # Parsed as `reclaim-tui console` with no flags, so the RECLAIM_*
        # variables apply (ctx.invoke would take the bare defaults).
        with console.make_context("console", [], parent=ctx) as console_ctx:
            console.invoke(console_ctx)


@cli.command()
@options(ENGINE)
@click.option(
    "--jobs", "jobs_path", default=None, help="JSON Lines jobs file to submit first ('-' = stdin)."
)
@click.option("--fail-on-errors", is_flag=True, help="Exit 1 when any row recorded an error.")
@json_option
@run
async def tick(jobs_path: str | None, fail_on_errors: bool, as_json: bool, **kw: Any) -> None:
    """One headless pass for cron: recover, submit, send, reclaim, replay."""
    settings = settings_from(kw)
    jobs = _read_jobs(jobs_path, settings) if jobs_path else []
    async with open_engine(settings, actor=Actor.TICK) as engine:
        started = engine.ledger.clock.now()
        try:
            report = await engine.tick(jobs)
        except LedgerError as exc:
            if exc.report is not None:
                # What the pass did before the ledger failed it, its rows
                # named; then the error and its exit code (4).
                finished = engine.ledger.clock.now()
                times = {"started_at": iso_time(started), "finished_at": iso_time(finished)}
                _report_failed(exc.report, as_json=as_json, extra=times)
            raise
        finished = engine.ledger.clock.now()
    times = {"started_at": iso_time(started), "finished_at": iso_time(finished)}
    _report(report, fail_on_errors, settings, as_json=as_json, extra=times)


def _report_failed(report: PassReport, *, as_json: bool, extra: dict[str, Any]) -> None:
    """The report of a pass a ledger error ended (its exit code follows)."""
    if as_json:
        _echo_json(report_record(report, **extra))
    else:
        click.echo(report.summary())
    for idem, message in report.errors[:20]:
        click.echo(f"  {idem}: {message}", err=True)


@cli.command("run")
@options(ENGINE)
@click.option(
    "--jobs", "jobs_path", default=None, help="JSON Lines jobs file to submit first ('-' = stdin)."
)
@click.option("--once", is_flag=True, help="One pass, then exit (a cron tick in this shape).")
@click.option(
    "--log",
    "log_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Append the service's JSON lines (ready, pass, draining, stopped) here, not stderr.",
)
@click.option(
    "--idle-sleep",
    default=5.0,
    show_default=True,
    type=Finite(0.0, DAY, min_open=True),
    help="The longest sleep between passes when nothing is due sooner.",
)
@click.option(
    "--inbox-listen",
    default=None,
    help="HOST:PORT: run the webhook inbox in this process too (events wake the loop).",
)
@click.option(
    "--inbox-secret",
    "inbox_secrets",
    multiple=True,
    help="With --inbox-listen: a static webhook's signing secret (whsec_…).",
)
@click.option(
    "--inbox-jwks-url",
    default=GOOGLE_JWKS_URL,
    show_default=True,
    help="With --inbox-listen: keys for dynamic webhooks' JWTs.",
)
@click.option(
    "--control",
    default=None,
    type=click.Path(dir_okay=False),
    help="Unix socket (mode 0600) a console attaches to: `reclaim-tui console --attach PATH`.",
)
@run
async def run_command(
    jobs_path: str | None,
    once: bool,
    log_path: str | None,
    idle_sleep: float,
    inbox_listen: str | None,
    inbox_secrets: tuple[str, ...],
    inbox_jwks_url: str,
    control: str | None,
    **kw: Any,
) -> None:
    """The reclaim loop as a service (systemd-friendly): passes until SIGTERM.

    The first SIGTERM/SIGINT drains (the pass in progress finishes), a second
    cancels it. JSON lines say ready / pass / draining / stopped. Exit 0
    when drained, 130 when cancelled.
    """
    from reclaim_tui.runner.service import InboxOptions, run_service

    if idle_sleep <= 0:
        raise ConfigError("--idle-sleep must be positive")
    settings = settings_from(kw)
    jobs = _read_jobs(jobs_path, settings) if jobs_path else []
    inbox = None
    if inbox_listen:
        inbox = InboxOptions(inbox_listen, inbox_secrets, inbox_jwks_url or None)
    serve = functools.partial(
        run_service, settings, jobs, once=once, inbox=inbox, idle_sleep=idle_sleep, control=control
    )
    if log_path:
        with open(log_path, "a", encoding="utf-8") as log:
            code = await serve(log=log)
    else:
        code = await serve()
    if code:
        sys.exit(code)


@cli.command()
@options(LEDGER, API, PASS, SEND)
@click.argument("jobs_path", metavar="FILE")
@click.option(
    "--no-send",
    is_flag=True,
    help="Only validate and reserve; a running service (or the next tick) sends them."
    " No API key needed, the SDK is not loaded.",
)
@json_option
@run
async def submit(jobs_path: str, no_send: bool, as_json: bool, **kw: Any) -> None:
    """Validate FILE (JSON Lines), reserve its jobs and send them."""
    settings = settings_from(kw)
    jobs = _read_jobs(jobs_path, settings)
    if not jobs and not as_json:
        click.echo(f"no jobs in {jobs_path} (blank lines and # comments only): nothing reserved")
        return
    # --no-send: for a producer beside a running service, which sends from its warm
    # client (a second cold process paid ~2 s of CPU to send them itself: issue 27).
    backend = _NoApi() if no_send else None
    async with open_engine(settings, actor=Actor.CLI, backend=backend) as engine:
        report = await engine.submit(jobs, send=not no_send)
    if as_json:
        _report(report, False, settings, as_json=True)
        return
    click.echo(
        f"{report.counts['inserted']} reserved, {report.counts['already_present']} "
        f"already in the ledger; {report.summary()}"
    )
    if report.unavailable is not None:
        _report(PassReport(unavailable=report.unavailable), False, settings)


@cli.command()
@options("db")
@click.option(
    "--listen",
    default="127.0.0.1:8787",
    show_default=True,
    help="HOST:PORT to bind (loopback unless told otherwise: put a TLS proxy in front).",
)
@click.option("--path", default=DEFAULT_PATH, show_default=True, help="The URL path served.")
@click.option(
    "--secret",
    "secrets",
    multiple=True,
    envvar="RECLAIM_WEBHOOK_SECRETS",
    help="A static webhook's signing secret (whsec_…); repeat it during a rotation."
    " From the environment: space-separated.",
)
@click.option(
    "--jwks-url",
    default=GOOGLE_JWKS_URL,
    show_default=True,
    help="Keys for dynamic webhooks' JWTs ('' refuses JWT-signed deliveries).",
)
@click.option("--audience", default=None, help="Check the JWTs' aud claim against this.")
@click.option(
    "--header-timeout",
    default=10.0,
    show_default=True,
    type=Finite(0.01, 3600),
    help="Seconds a connection has to send its request's headers before it is closed.",
)
@click.option(
    "--body-timeout",
    default=30.0,
    show_default=True,
    type=Finite(0.01, 3600),
    help="Seconds a delivery has to send its body (else 408, the connection closed).",
)
@click.option(
    "--max-connections",
    default=0,
    type=click.IntRange(0, 1_000_000),
    help="Connections open at once, all clients together (default 0: half the open-file"
    " limit, at most 512); at the cap the oldest idle one is closed.",
)
@click.option(
    "--max-client-connections",
    default=32,
    show_default=True,
    type=click.IntRange(1, 1_000_000),
    help="Connections one client (an IPv4 address, an IPv6 /64) may hold open.",
)
@run
async def inbox(
    db: str,
    listen: str,
    path: str,
    secrets: tuple[str, ...],
    jwks_url: str,
    audience: str | None,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    max_client_connections: int,
) -> None:
    """Receive the API's webhooks into the ledger (verified, kept once, then 200)."""
    from reclaim_tui.inbox.command import serve_inbox
    from reclaim_tui.inbox.server import ConnectionLimits

    _require_folder(db)
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_connections=max_connections,
        per_client=max_client_connections,
    )
    await serve_inbox(db, listen, path, secrets, jwks_url, audience, limits)


@cli.group()
def webhooks() -> None:
    """Static webhooks of the project (the API's WebhookService, over the SDK)."""


def _admin(kw: dict[str, Any]) -> WebhookAdmin:
    from reclaim_tui.core.gemini.backend import resolve_api_key
    from reclaim_tui.core.gemini.webhooks import WebhookAdmin

    return WebhookAdmin(resolve_api_key(kw.get("api_key")), kw.get("base_url"))


@webhooks.command("create")
@options("base_url", "api_key")
@click.argument("uri")
@click.option("--name", default=None, help="A display name for the webhook.")
@run
async def webhooks_create(uri: str, name: str | None, **kw: Any) -> None:
    """Register URI for the interaction events; prints the signing secret (shown once)."""
    from reclaim_tui.core.gemini.webhooks import INTERACTION_EVENTS

    admin = _admin(kw)
    try:
        made = await admin.create(uri, name, INTERACTION_EVENTS)
    finally:
        await admin.aclose()
    click.echo(json.dumps(made, indent=2))
    secret = made.get("new_signing_secret")
    if secret:
        click.echo(
            "the signing secret above is shown once: start the inbox with --secret (or"
            " RECLAIM_WEBHOOK_SECRETS)",
            err=True,
        )


@webhooks.command("list")
@options("base_url", "api_key")
@run
async def webhooks_list(**kw: Any) -> None:
    """Every static webhook: id, name, URI, events, state."""
    admin = _admin(kw)
    try:
        found = await admin.list()
    finally:
        await admin.aclose()
    click.echo(json.dumps(found, indent=2))


@webhooks.command("delete")
@options("base_url", "api_key")
@click.argument("webhook_id")
@run
async def webhooks_delete(webhook_id: str, **kw: Any) -> None:
    """Delete a static webhook."""
    admin = _admin(kw)
    try:
        await admin.delete(webhook_id)
    finally:
        await admin.aclose()
    click.echo(f"deleted {webhook_id}")


@webhooks.command("ping")
@options("base_url", "api_key")
@click.argument("webhook_id")
@run
async def webhooks_ping(webhook_id: str, **kw: Any) -> None:
    """Ask the API to send the webhook a ping event."""
    admin = _admin(kw)
    try:
        out = await admin.ping(webhook_id)
    finally:
        await admin.aclose()
    click.echo(json.dumps(out, indent=2) if out else f"ping sent to {webhook_id}")


@cli.command()
@options("db")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@options("retention_days")
@run
async def status(db: str, as_json: bool, retention_days: float) -> None:
    """Counts by status and the oldest age in each."""
    async with open_ledger(_reader_settings(db), readonly=True, create=False) as ledger:
        counts = await ledger.counts()
        orphans, orphans_since = await _orphans(ledger)
        seen = await attention(ledger, retention_days)
        now = ledger.clock.now()
        text_index = getattr(ledger, "text_index_note", None)
    at_risk = seen.past_retention
    # `oldest_since` (ISO-8601 UTC) says when; `oldest_age_s` (seconds) how
    # long ago, as it always did: scripts and tests read it, and an age is
    # what `status` shows. Both come from the same instant.
    data: dict[str, dict[str, Any]] = {
        s.value: _oldest(now, counts.get(s.value, (0, None))[0], counts.get(s.value, (0, None))[1])
        for s in Status
    }
    data["orphans"] = _oldest(now, orphans, orphans_since)
    data["past_retention"] = {
        **_oldest(now, at_risk.count, at_risk.oldest_submitted_at),
        "retention_days": retention_days,
    }
    # Submitted rows, counted again by what they wait for.
    data["asking"] = _oldest(now, seen.asking, None)
    data["unknown_status"] = _oldest(now, seen.unknown_status, None)
    data["not_found"] = _oldest(now, seen.not_found, None)
    data["not_found_held"] = _oldest(now, seen.not_found_held, None)
    data["plans_ready"] = _oldest(now, seen.plans_ready, None)
    if text_index:
        click.echo(f"note: {text_index}", err=True)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"{'status':<11} {'count':>9}  oldest")
    for name, v in data.items():
        if name in (
            "past_retention",
            "asking",
            "unknown_status",
            "not_found",
            "not_found_held",
            "plans_ready",
        ):
            continue
        age = v["oldest_age_s"]
        click.echo(f"{name:<11} {v['count']:>9}  {_fmt_age(age) if age is not None else '-'}")
    for line in _attention_lines(seen, retention_days):
        click.echo(line, err=True)


@cli.command()
@click.option(
    "--from", "source", required=True, metavar="DB",
    help="The ledger to copy: a SQLite file or a postgresql:// URL (not changed).",
)  # fmt: skip
@click.option(
    "--to", "target", required=True, metavar="DB",
    help="The ledger to copy into: created when new; rows already there are kept.",
)  # fmt: skip
@click.option(
    "--batch", default=2000, show_default=True, type=click.IntRange(1, 100_000),
    help="Rows per transaction in the target.",
)  # fmt: skip
@click.option("--check", "check_only", is_flag=True, help="Only compare the two ledgers.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@run
async def migrate(source: str, target: str, batch: int, check_only: bool, as_json: bool) -> None:
    """Copy a ledger to another engine (SQLite ⇄ PostgreSQL), then prove it.

    Jobs, events, results and the webhook inbox are copied with their ids, a
    batch per transaction; running it again finishes a copy that was cut
    short and writes nothing once it is whole. Then every row of every table
    is compared, column by column: exit 0 only when the target holds exactly
    the source. Stop what writes to the source first (ticks, service, console).
    """
    from reclaim_tui.core.ledger.transfer import compare, copy_ledger

    if source == target:
        raise ConfigError("--from and --to name the same ledger")
    async with (
        open_ledger(_reader_settings(source), readonly=True, create=False) as src,
        open_ledger(_reader_settings(target), create=not check_only) as dst,
    ):
        copies = [] if check_only else await copy_ledger(src, dst, batch=batch)
        checked = await compare(src, dst)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "copied": {c.name: {"read": c.read, "written": c.written} for c in copies},
                    "same": checked.same,
                    "sequences_behind": checked.sequences,
                    "tables": {
                        t.name: {
                            "source": t.source,
                            "target": t.target,
                            "different": t.different,
                            "first_different": t.differing,
                            "source_digest": t.source_digest,
                            "target_digest": t.target_digest,
                        }
                        for t in checked.tables
                    },
                },
                indent=2,
            )
        )
    else:
        written = {c.name: c.written for c in copies}
        click.echo(f"{'table':<15} {'source':>9} {'target':>9} {'written':>9}  check")
        for t in checked.tables:
            verdict = "same" if t.same else f"{t.different} differ: {', '.join(t.differing[:5])}"
            shown = written.get(t.name, "-")
            click.echo(f"{t.name:<15} {t.source:>9} {t.target:>9} {shown:>9}  {verdict}")
        for behind in checked.sequences:
            click.echo(f"sequence behind: {behind}", err=True)
        click.echo(
            f"{shown_db(target)} holds every row of {shown_db(source)}"
            if checked.same
            else f"error: {shown_db(target)} does not hold exactly {shown_db(source)}",
            err=not checked.same,
        )
    if not checked.same:
        sys.exit(1)


async def _orphans(ledger: Ledger) -> tuple[int, float | None]:
    """How many orphans there are (core/ledger/schema.py's rule, as the console's
    orphans tab counts them) and when the oldest one's create was sent.

    An orphan's age runs from its `sent_at`: from then on the create's outcome
    is unknown, and that clock is what an operator weighs (how long the
    interaction may have run and cost, how near the API's retention it is).
    `state_since` can be much older (a row waits in `reserving` through every
    outside-failure back-off before it is sent). Rows with no `sent_at`
    (written before that column existed) fall back to `state_since`.
    """
    reader = ConsoleReader(ledger, ledger, ledger.clock)
    await reader.refresh_liveness()
    count, oldest = 0, None
    async for rows in reader.iter_view(View(orphans=True)):
        count += len(rows)
        for row in rows:
            since = row.sent_at if row.sent_at is not None else row.state_since
            oldest = since if oldest is None else min(oldest, since)
    return count, oldest


def _attention_lines(seen: Attention, retention_days: float) -> list[str]:
    """What `status` warns about, on stderr, one line each."""
    lines = []
    if seen.past_retention.count:
        lines.append(
            f"warning: {seen.past_retention.count} submitted row(s) older than the API's"
            f" retention ({retention_days:g} days): their interactions may be gone; run `tick`"
            " to collect what is left (a 404 follows --on-gone)"
        )
    if seen.asking:
        lines.append(
            f"note: {seen.asking} submitted row(s) wait for an operator: their interaction"
            " requires action (see `show KEY`; `answer KEY TEXT` or `cancel KEY`)"
        )
    if seen.plans_ready:
        lines.append(
            f"note: {seen.plans_ready} planning job(s) have a research plan ready (see `show"
            " KEY`): `answer KEY TEXT` approves it, `answer --refine KEY TEXT` asks for a new one"
        )
    if seen.unknown_status:
        lines.append(
            f"note: {seen.unknown_status} submitted row(s) report an API status this version"
            " does not know; they are polled with backoff until their deadline"
        )
    if seen.not_found:
        lines.append(
            f"note: {seen.not_found} submitted row(s) answer 404 inside the API's retention:"
            " no proof of loss, polled again with backoff for --gone-grace"
        )
    if seen.not_found_held:
        lines.append(
            f"warning: {seen.not_found_held} submitted row(s) answered 404 for longer than"
            " --gone-grace: held for an operator (still polled rarely; `cancel KEY` then"
            " `retry KEY` resends — possible duplicate spend)"
        )
    return lines


def _oldest(now: float, count: int, since: float | None) -> dict[str, Any]:
    """A `status --json` entry: how many, and since when the oldest waits."""
    return {"count": count, "oldest_age_s": _age(now, since), "oldest_since": iso_time(since)}


def _age(now: float, since: float | None) -> float | None:
    return round(now - since, 1) if since is not None else None


def _fmt_age(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


async def _resolve(ledger: Ledger, idem: str) -> str:
    idem = idem.strip()
    if not idem:
        raise OperatorError("the key is empty: give a job's key or a unique prefix of it")
    if await ledger.get(idem) is not None:
        return idem
    matches = await ledger.find(idem)
    if len(matches) == 1:
        return matches[0].idem
    if not matches:
        raise OperatorError(f"no job with key {idem}")
    named = ", ".join(m.idem for m in matches[:5])
    more = f" and {len(matches) - 5:,} more" if len(matches) > 5 else ""
    raise OperatorError(f"{idem} is ambiguous ({len(matches):,} keys): {named}{more}")


@cli.command()
@options("db")
@click.argument("idem")
@json_option
@run
async def show(db: str, idem: str, as_json: bool) -> None:
    """A row, its timeline and its stored result (IDEM may be a unique prefix)."""
    async with open_ledger(_reader_settings(db), readonly=True, create=False) as ledger:
        idem = await _resolve(ledger, idem)
        row = await ledger.get(idem)
        events = await ledger.events(idem)
        result = await ledger.result(idem)
    assert row is not None
    if as_json:
        _echo_json(job_record(row, result, events))
        return
    for name, value in row_dict(row).items():
        if name.endswith(("_at", "_until", "state_since")) and isinstance(value, float):
            value = _when(value) if value else "-"
        click.echo(f"{name:>13}: {value if value is not None else '-'}")
    click.echo("\ntimeline:")
    for ev in events:
        when = _when(ev.at)
        arrow = f"{ev.from_status or '∅'} → {ev.to_status}"
        click.echo(f"  {when}  {ev.actor:<8} {arrow:<24} {ev.note}")
    if result is not None:
        click.echo(f"\nresult ({result.interaction_id}, usage {json.dumps(result.usage)}):")
        click.echo(result.output_text)


def _count(n: int, word: str) -> str:
    """'1 row', '2 rows' (the CLI's counts; "1 rows" read as a bug)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _when(at: float) -> str:
    """UTC, said so (the console's spelling): a local time without its zone misleads."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


@cli.command()
# No --lease-seconds: it must outlast an API call (--request-timeout), which
# replay never makes; its leases are renewed while its sink runs.
@options(LEDGER, SINK, "concurrency", "verbose")
@json_option
@run
async def replay(as_json: bool, **kw: Any) -> None:
    """Deliver stored results of done-but-unconsumed rows (never calls the API)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, backend=_NoApi()) as engine:
        report = await engine.replay()
    _report(report, False, as_json=as_json)


@cli.command()
@options(LEDGER, API, PASS, RECOVER, "max_attempts", "webhook_url")
@click.option("--force", is_flag=True, help="Also held orphans and ones not yet due.")
@click.argument("idems", nargs=-1)
@json_option
@run
async def recover(force: bool, idems: tuple[str, ...], as_json: bool, **kw: Any) -> None:
    """Settle orphans: adopt by label where possible, else the orphan policy
    (resubmit marks them for resend: the next tick sends them)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        keys = [await _resolve(engine.ledger, i) for i in idems] if idems else None
        report = await engine.recover_orphans(force=force, idems=keys)
    # An orphan "resubmitted" by recovery is only marked for resend here (a
    # tick's later send step is what sends it): counted under that name.
    marked = report.counts.pop("resubmitted", 0)
    summary = _marked_for_resend(report.summary(), marked)
    extra = {"marked_for_resend": marked}
    _report(report, False, settings, summary=summary, as_json=as_json, extra=extra)


def _marked_for_resend(summary: str, marked: int) -> str:
    """recover's summary line, with the orphans marked for resend."""
    if not marked:
        return summary
    note = f"marked for resend={marked} (the next tick sends them)"
    return note if summary == "idle" else f"{summary} {note}"


@cli.command()
@options(LEDGER)
@click.argument("idem")
@json_option
@run
async def retry(idem: str, as_json: bool, **kw: Any) -> None:
    """Mark a failed or cancelled job for resend (fresh attempt budget); the
    next tick sends it."""
    settings = settings_from(kw)
    # Marked, not sent: the engine's send step takes every due row, not this
    # one alone, and sending is the tick's job (pacing, circuit breaker,
    # orphan handling) that cron already runs. Marking needs no API and no key.
    async with open_engine(settings, actor=Actor.CLI, backend=_NoApi()) as engine:
        row = await engine.operator.retry(await _resolve(engine.ledger, idem), actor=Actor.CLI)
    if as_json:
        _echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} (marked for resend: the next tick sends it)")


@cli.command()
@options(LEDGER, API, "emulator_lookup")
@click.argument("idem")
@json_option
@run
async def cancel(idem: str, as_json: bool, **kw: Any) -> None:
    """Cancel a reserving or submitted job (and ask the API to cancel it)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        row = await engine.operator.cancel(await _resolve(engine.ledger, idem), actor=Actor.CLI)
    if as_json:
        _echo_json(export_record(row))
    else:
        click.echo(f"{row.idem}: {row.status.value}")
    if cancelling.is_pending(row):
        # Cancelled here, but the API did not confirm: it may still run and bill.
        click.echo(
            f"error: {row.idem}: {row.last_error}; the row is marked {cancelling.PENDING!r}"
            " and the next tick (or the service) asks the API again",
            err=True,
        )
        sys.exit(EXIT_API_UNAVAILABLE)


@cli.command()
@options(LEDGER, API, "webhook_url")
@click.argument("idem")
@click.argument("text")
@click.option(
    "--refine",
    is_flag=True,
    help="A job with a research plan ready: ask for a revised plan instead of approving it.",
)
@json_option
@run
async def answer(idem: str, text: str, refine: bool, as_json: bool, **kw: Any) -> None:
    """Answer a job whose interaction requires action, or approve its research
    plan (continue it with TEXT, a follow-up turn)."""
    if not text.strip():
        raise ConfigError("TEXT is empty: say what the interaction should go on with")
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        key = await _resolve(engine.ledger, idem)
        try:
            row = await engine.operator.answer(key, text, actor=Actor.CLI, refine=refine)
        except OperatorError as exc:
            cause = exc.__cause__
            if not (isinstance(cause, BackendError) and cause.outside):
                raise
            # The API, not the answer, is the trouble: exit 6, as tick does.
            click.echo(f"error: API unreachable or refusing us ({cause.cause}): {exc}", err=True)
            sys.exit(EXIT_API_UNAVAILABLE)
    if as_json:
        _echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} ({row.handle})")


@cli.command()
@options(LEDGER, API)
@click.argument("idem")
@click.argument("interaction_id")
@json_option
@run
async def adopt(idem: str, interaction_id: str, as_json: bool, **kw: Any) -> None:
    """Attach an existing INTERACTION_ID to an orphaned or failed job."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        key = await _resolve(engine.ledger, idem)
        row = await engine.operator.adopt(key, interaction_id, actor=Actor.CLI)
    if as_json:
        _echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} ({row.handle})")


@cli.command()
@options("db")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines (one row a line) or CSV.",
)
@click.option(
    "--status",
    "only",
    type=click.Choice([*(s.value for s in Status), "orphans"]),
    default=None,
    help="Only the rows in this status, or the orphans (as `status` counts them).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of stdout.",
)
@json_option
@run
async def export(db: str, fmt: str, only: str | None, output: str | None, as_json: bool) -> None:
    """Every row (or one status) as JSON Lines or CSV, to stdout or --output.

    Times are ISO-8601 UTC, the spec is a JSON object (in CSV: its JSON
    text), and a row's stored result adds its output_text and usage. With
    --json (and --output), what was written is reported as one JSON document."""
    if as_json and not output:
        raise click.UsageError("--json reports what --output wrote: give -o FILE as well")
    written = 0
    async with open_ledger(_reader_settings(db), readonly=True, create=False) as ledger:
        with open(output, "w", encoding="utf-8", newline="") if output else _stdout() as out:
            async for rows in _export_pages(ledger, only):
                results = await ledger.results([r.idem for r in rows])
                write_export(rows, fmt, out, results=results, header=written == 0)
                written += len(rows)
            if fmt == "csv" and written == 0:
                write_export([], fmt, out)
    if as_json:
        _echo_json({"rows": written, "format": fmt, "status": only, "output": output})
    elif output:
        click.echo(f"{_count(written, 'row')} written to {output}", err=True)


def _stdout() -> Any:
    """stdout as a context manager that leaves it open."""
    return contextlib.nullcontext(sys.stdout)


async def _export_pages(ledger: Ledger, only: str | None) -> AsyncIterator[list[Row]]:
    """The rows an export writes, a page at a time: every row in key order,
    or those of one status (or the orphans) in the console's age order."""
    if only is None:
        page: list[Row] = []
        async for row in ledger.iter_rows():
            page.append(row)
            if len(page) == 2000:
                yield page
                page = []
        if page:
            yield page
        return
    reader = ConsoleReader(ledger, ledger, ledger.clock)
    if only == "orphans":
        await reader.refresh_liveness()
        view = View(orphans=True)
    else:
        view = View(statuses=frozenset({Status(only)}))
    async for rows in reader.iter_view(view):
        yield rows


def parse_age(ctx: click.Context | None, param: click.Parameter | None, value: str) -> float:
    """`--older-than` (core/ledger/prune.py's parse_age as a click callback: exit 2)."""
    try:
        return prune_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from exc


@cli.command()
@options(LEDGER)
@click.option(
    "--older-than",
    "older_than",
    required=True,
    metavar="AGE",
    callback=parse_age,
    help="Prune rows in their status for longer than this: 30d, 12h, 90m or seconds.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    default=("consumed",),
    show_default=True,
    type=click.Choice([s.value for s in Status]),
    help="A status to prune (repeat it); only consumed, failed and cancelled are allowed.",
)
@click.option(
    "--archive",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Append every pruned job (result, events) to this JSON Lines file first, fsync'd.",
)
@click.option(
    "--batch",
    default=DEFAULT_BATCH,
    show_default=True,
    type=click.IntRange(1, 100_000),
    help="Rows deleted per transaction (the ledger's write lock is held for one batch).",
)
@click.option("--dry-run", is_flag=True, help="Only count what would be pruned; change nothing.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@run
async def prune(
    older_than: float,
    statuses: tuple[str, ...],
    archive: Path | None,
    batch: int,
    dry_run: bool,
    yes: bool,
    as_json: bool,
    **kw: Any,
) -> None:
    """Delete finished jobs older than AGE, with their events and results.

    The age is the time in the row's status (state_since). Only consumed
    rows unless --status says failed or cancelled too; never reserving,
    submitted or done. Without --yes it asks on a terminal and refuses
    elsewhere (exit 2)."""
    settings = settings_from(kw)
    wanted = prunable_statuses(statuses)
    async with open_ledger(settings, readonly=dry_run, create=False) as ledger:
        now = ledger.clock.now()
        found = await count_prunable(ledger, statuses=wanted, older_than_s=older_than, now=now)
        if dry_run or not found.count:
            _print_prunable(found, older_than, dry_run=dry_run, as_json=as_json)
            return
        if not yes:
            _confirm_prune(found, older_than)
        report = await prune_rows(
            ledger,
            statuses=wanted,
            older_than_s=older_than,
            now=now,
            archive=archive,
            batch=batch,
        )
    if as_json:
        _echo_json({"dry_run": False, "older_than_s": older_than, **report.as_json()})
        return
    by_status = " ".join(f"{k}={v}" for k, v in report.by_status.items())
    saved = f"; archived to {archive}" if archive is not None else ""
    click.echo(
        f"pruned {_count(report.pruned, 'row')} ({by_status}) in {report.batches} batch(es),"
        f" in their status since before {iso_time(report.cutoff)}{saved}"
    )


def _print_prunable(found: PruneCount, older_than: float, *, dry_run: bool, as_json: bool) -> None:
    if as_json:
        _echo_json({"dry_run": dry_run, "older_than_s": older_than, "pruned": 0, **found.as_json()})
        return
    if not found.count:
        click.echo(f"nothing to prune: no row in its status since before {iso_time(found.cutoff)}")
        return
    click.echo(f"would prune {_prunable_text(found)}")


def _prunable_text(found: PruneCount) -> str:
    by_status = " ".join(f"{k}={v}" for k, v in found.by_status.items())
    return (
        f"{_count(found.count, 'row')} ({by_status}), in their status since"
        f" {iso_time(found.oldest)} (oldest) to {iso_time(found.newest)} (newest)"
    )


def _confirm_prune(found: PruneCount, older_than: float) -> None:
    """Ask on a terminal; elsewhere (cron, a pipe) refuse: a ConfigError (exit 2)."""
    if not _interactive():
        raise ConfigError(
            f"prune would delete {_count(found.count, 'row')}: pass --yes to prune without"
            " a terminal to confirm on (or --dry-run to count them)"
        )
    if not click.confirm(f"prune {_prunable_text(found)}?", default=False, err=True):
        raise ConfigError("prune: not confirmed; nothing was deleted")


def _interactive() -> bool:
    """Whether someone can answer a question on this terminal."""
    return sys.stdin.isatty()


@cli.command()
# No -v: the console's engine logs in its worker process, and log lines on
# this process's stderr would be drawn over the screen.
@options(LEDGER, API, SINK, "concurrency", "lease_seconds", SEND, RECOVER, POLL, "retention_days")
@click.option("--readonly", is_flag=True, help="Watch only: every mutating action is hidden.")
@click.option(
    "--interval",
    default=2.0,
    show_default=True,
    type=Finite(0.0, DAY, min_open=True),
    help="Seconds between the console's reclaim passes.",
)
@click.option(
    "--attach",
    default=None,
    type=click.Path(dir_okay=False),
    help="A running service's --control socket: run no loop or engine here, use the service's.",
)
def console(readonly: bool, interval: float, attach: str | None, **kw: Any) -> None:
    """The operator console on a ledger (also: bare `reclaim-tui`)."""
    from reclaim_tui.tui.launch import run_console

    try:
        settings = settings_from(kw)
        if attach and readonly:
            raise ConfigError("--attach and --readonly: pick one (read-only needs no service)")
        if attach:
            settings = _attached(settings, attach)
        elif not readonly:
            _refuse_first_run(settings)
        run_console(settings, readonly=readonly, interval=interval, attach=attach)
    except ReclaimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(_exit_code(exc))


def _attached(settings: Settings, attach: str) -> Settings:
    """The console reads the ledger the service writes: the service's `db`
    (and `out`); a --db naming another ledger is refused, not followed."""
    from click.core import ParameterSource

    from reclaim_tui.runner.control import service_settings

    theirs = asyncio.run(service_settings(attach))
    db, out = str(theirs.get("db") or settings.db), str(theirs.get("out") or settings.out)
    source = click.get_current_context().get_parameter_source("db")
    if source not in (None, ParameterSource.DEFAULT) and not _same_ledger(settings.db, db):
        raise ConfigError(
            f"--db {shown_db(settings.db)}: the service at {attach} runs on {shown_db(db)};"
            " leave --db out to watch the service's ledger"
        )
    return settings.with_(db=db, out=out)


def _same_ledger(mine: str, theirs: str) -> bool:
    if is_database_url(mine) or is_database_url(theirs):
        return mine == theirs
    return Path(mine).resolve() == Path(theirs).resolve()


def _refuse_first_run(settings: Settings) -> None:
    """No ledger and no API to reach (bare `reclaim-tui` in an empty folder):
    a ConfigError that points at the demo, which needs neither."""
    from reclaim_tui.core.gemini import resolve_api_key

    if (
        is_database_url(settings.db)
        or Path(settings.db).exists()
        or settings.base_url
        or resolve_api_key(settings.api_key)
    ):
        return
    raise ConfigError(
        f"no ledger at {shown_db(settings.db)} and no Gemini API key (--api-key, GEMINI_API_KEY or"
        " GOOGLE_API_KEY). To try it without a key: `reclaim-tui demo` (the console on an"
        " embedded emulator); every command: `reclaim-tui --help`"
    )


@cli.command()
@click.option("--db", default=None, help="Ledger for the demo (default: a fresh temp file).")
@click.option(
    "--jobs",
    "job_count",
    default=36,
    show_default=True,
    type=click.IntRange(0, 100_000),
    help="Demo jobs to seed.",
)
@click.option(
    "--seed", default=7, show_default=True, type=int, help="Seed of the demo's jobs and timings."
)
def demo(db: str | None, job_count: int, seed: int) -> None:
    """The console on the embedded emulator with seeded demo jobs; no key, no network."""
    from reclaim_tui.tui.demo import left_behind, make_demo_app

    try:
        app = make_demo_app(db_path=db, jobs=job_count, seed=seed)
        try:
            app.run()
        finally:
            # Said after the screen is gone (and after a crash too): else the
            # demo's temp folder is left behind with nobody knowing where.
            click.echo(left_behind(app.config.settings))
    except ReclaimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(_exit_code(exc))
    if app.return_code:
        sys.exit(app.return_code)


cli.add_command(costs)
bound_numbers(cli)  # after every command is added: no numeric flag without a range


def main() -> None:
    cli(prog_name="reclaim-tui")


if __name__ == "__main__":
    main()
