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
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Coroutine
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.cli_options import API, ENGINE, LEDGER, PASS, POLL, RECOVER, SEND, SINK, options
from reclaim_tui.config import Settings
from reclaim_tui.core.connection import is_database_url, shown_db
from reclaim_tui.core.export import row_dict, write_export
from reclaim_tui.core.jobsfile import parse_jobs_bytes, read_jobs_file
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.models import (
    Actor,
    GonePolicy,
    JobSpec,
    OrphanPolicy,
    PassReport,
    RemoteInteraction,
    Status,
)
from reclaim_tui.core.queries import ConsoleReader, View
from reclaim_tui.core.retention import Attention, attention
from reclaim_tui.emulator.command import emulator as emulator_command
from reclaim_tui.inbox import DEFAULT_PATH, GOOGLE_JWKS_URL

if TYPE_CHECKING:
    from reclaim_tui.core.gemini.webhooks import WebhookAdmin
from reclaim_tui.errors import (
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

    async def find_by_label(self, idem: str) -> RemoteInteraction | None:
        raise self._called("find_by_label")

    async def aclose(self) -> None:
        return None

    @staticmethod
    def _called(call: str) -> RuntimeError:
        return RuntimeError(f"{call}: this command must not call the API")


def _read_jobs(path: str, settings: Settings) -> list[JobSpec]:
    if path == "-":
        data = sys.stdin.buffer.read()
        return parse_jobs_bytes(data, source="<stdin>", default_model=settings.model)
    return read_jobs_file(path, default_model=settings.model)


def _report(
    report: PassReport,
    fail_on_errors: bool,
    settings: Settings | None = None,
    *,
    summary: str | None = None,
) -> None:
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


def _key_source(settings: Settings | None) -> str:
    """Where the API key came from (never the key itself)."""
    if settings is not None and settings.api_key:
        return "--api-key"
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        if os.environ.get(name):
            return f"${name}"
    return "nowhere: no key was given (the emulator's default was used)"


@click.group(invoke_without_command=True)
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
@run
async def tick(jobs_path: str | None, fail_on_errors: bool, **kw: Any) -> None:
    """One headless pass for cron: recover, submit, send, reclaim, replay."""
    settings = settings_from(kw)
    jobs = _read_jobs(jobs_path, settings) if jobs_path else []
    async with open_engine(settings, actor=Actor.TICK) as engine:
        report = await engine.tick(jobs)
    _report(report, fail_on_errors, settings)


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
    type=float,
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
@run
async def run_command(
    jobs_path: str | None,
    once: bool,
    log_path: str | None,
    idle_sleep: float,
    inbox_listen: str | None,
    inbox_secrets: tuple[str, ...],
    inbox_jwks_url: str,
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
    if log_path:
        with open(log_path, "a", encoding="utf-8") as log:
            code = await run_service(
                settings, jobs, once=once, log=log, inbox=inbox, idle_sleep=idle_sleep
            )
    else:
        code = await run_service(settings, jobs, once=once, inbox=inbox, idle_sleep=idle_sleep)
    if code:
        sys.exit(code)


@cli.command()
@options(LEDGER, API, PASS, SEND)
@click.argument("jobs_path", metavar="FILE")
@run
async def submit(jobs_path: str, **kw: Any) -> None:
    """Validate FILE (JSON Lines), reserve its jobs and send them."""
    settings = settings_from(kw)
    jobs = _read_jobs(jobs_path, settings)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        report = await engine.submit(jobs)
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
@run
async def inbox(
    db: str,
    listen: str,
    path: str,
    secrets: tuple[str, ...],
    jwks_url: str,
    audience: str | None,
) -> None:
    """Receive the API's webhooks into the ledger (verified, kept once, then 200)."""
    from reclaim_tui.inbox.command import serve_inbox

    _require_folder(db)
    await serve_inbox(db, listen, path, secrets, jwks_url, audience)


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
    at_risk = seen.past_retention
    data: dict[str, dict[str, Any]] = {
        s.value: {
            "count": counts.get(s.value, (0, None))[0],
            "oldest_age_s": _age(now, counts.get(s.value, (0, None))[1]),
        }
        for s in Status
    }
    data["orphans"] = {"count": orphans, "oldest_age_s": _age(now, orphans_since)}
    data["past_retention"] = {
        "count": at_risk.count,
        "oldest_age_s": _age(now, at_risk.oldest_submitted_at),
        "retention_days": retention_days,
    }
    # Submitted rows, counted again by what they wait for.
    data["asking"] = {"count": seen.asking, "oldest_age_s": None}
    data["unknown_status"] = {"count": seen.unknown_status, "oldest_age_s": None}
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"{'status':<11} {'count':>9}  oldest")
    for name, v in data.items():
        if name in ("past_retention", "asking", "unknown_status"):
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
    from reclaim_tui.core.transfer import compare, copy_ledger

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
        click.echo(
            f"{shown_db(target)} holds every row of {shown_db(source)}"
            if checked.same
            else f"error: {shown_db(target)} does not hold exactly {shown_db(source)}",
            err=not checked.same,
        )
    if not checked.same:
        sys.exit(1)


async def _orphans(ledger: Ledger) -> tuple[int, float | None]:
    """How many orphans there are (core/schema.py's rule, as the console's
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
    if seen.unknown_status:
        lines.append(
            f"note: {seen.unknown_status} submitted row(s) report an API status this version"
            " does not know; they are polled with backoff until their deadline"
        )
    return lines


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
    if await ledger.get(idem) is not None:
        return idem
    matches = await ledger.find(idem)
    if len(matches) == 1:
        return matches[0].idem
    if not matches:
        raise OperatorError(f"no job with key {idem}")
    raise OperatorError(f"{idem} is ambiguous: " + ", ".join(m.idem for m in matches))


@cli.command()
@options("db")
@click.argument("idem")
@run
async def show(db: str, idem: str) -> None:
    """A row, its timeline and its stored result (IDEM may be a unique prefix)."""
    async with open_ledger(_reader_settings(db), readonly=True, create=False) as ledger:
        idem = await _resolve(ledger, idem)
        row = await ledger.get(idem)
        events = await ledger.events(idem)
        result = await ledger.result(idem)
    assert row is not None
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


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


@cli.command()
# No --lease-seconds: it must outlast an API call (--request-timeout), which
# replay never makes; its leases are renewed while its sink runs.
@options(LEDGER, SINK, "concurrency", "verbose")
@run
async def replay(**kw: Any) -> None:
    """Deliver stored results of done-but-unconsumed rows (never calls the API)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, backend=_NoApi()) as engine:
        report = await engine.replay()
    _report(report, False)


@cli.command()
@options(LEDGER, API, PASS, RECOVER, "max_attempts", "webhook_url")
@click.option("--force", is_flag=True, help="Also held orphans and ones not yet due.")
@click.argument("idems", nargs=-1)
@run
async def recover(force: bool, idems: tuple[str, ...], **kw: Any) -> None:
    """Settle orphans: adopt by label where possible, else the orphan policy
    (resubmit marks them for resend: the next tick sends them)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        keys = [await _resolve(engine.ledger, i) for i in idems] if idems else None
        report = await engine.recover_orphans(force=force, idems=keys)
    _report(report, False, settings, summary=_marked_for_resend(report))


def _marked_for_resend(report: PassReport) -> str:
    """recover's summary: an orphan "resubmitted" by recovery is only marked
    for resend here (a tick's later send step is what sends it)."""
    marked = report.counts.pop("resubmitted", 0)
    summary = report.summary()
    if not marked:
        return summary
    note = f"marked for resend={marked} (the next tick sends them)"
    return note if summary == "idle" else f"{summary} {note}"


@cli.command()
@options(LEDGER)
@click.argument("idem")
@run
async def retry(idem: str, **kw: Any) -> None:
    """Mark a failed or cancelled job for resend (fresh attempt budget); the
    next tick sends it."""
    settings = settings_from(kw)
    # Marked, not sent: the engine's send step takes every due row, not this
    # one alone, and sending is the tick's job (pacing, circuit breaker,
    # orphan handling) that cron already runs. Marking needs no API and no key.
    async with open_engine(settings, actor=Actor.CLI, backend=_NoApi()) as engine:
        row = await engine.operator.retry(await _resolve(engine.ledger, idem), actor=Actor.CLI)
    click.echo(f"{row.idem}: {row.status.value} (marked for resend: the next tick sends it)")


@cli.command()
@options(LEDGER, API, "emulator_lookup")
@click.argument("idem")
@run
async def cancel(idem: str, **kw: Any) -> None:
    """Cancel a reserving or submitted job (and ask the API to cancel it)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        row = await engine.operator.cancel(await _resolve(engine.ledger, idem), actor=Actor.CLI)
    click.echo(f"{row.idem}: {row.status.value}")


@cli.command()
@options(LEDGER, API, "webhook_url")
@click.argument("idem")
@click.argument("text")
@run
async def answer(idem: str, text: str, **kw: Any) -> None:
    """Answer a job whose interaction requires action (continue it with TEXT)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        key = await _resolve(engine.ledger, idem)
        row = await engine.operator.answer(key, text, actor=Actor.CLI)
    click.echo(f"{row.idem}: {row.status.value} ({row.handle})")


@cli.command()
@options(LEDGER, API)
@click.argument("idem")
@click.argument("interaction_id")
@run
async def adopt(idem: str, interaction_id: str, **kw: Any) -> None:
    """Attach an existing INTERACTION_ID to an orphaned or failed job."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI) as engine:
        key = await _resolve(engine.ledger, idem)
        row = await engine.operator.adopt(key, interaction_id, actor=Actor.CLI)
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
    type=click.Choice([s.value for s in Status]),
    default=None,
    help="Only the rows in this status.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of stdout.",
)
@run
async def export(db: str, fmt: str, only: str | None, output: str | None) -> None:
    """Every row (or one status) as JSON Lines or CSV, to stdout or --output."""
    async with open_ledger(_reader_settings(db), readonly=True, create=False) as ledger:
        rows = [r async for r in ledger.iter_rows() if only is None or r.status.value == only]
    if output:
        with open(output, "w", encoding="utf-8", newline="") as f:
            write_export(rows, fmt, f)
        click.echo(f"{len(rows)} rows written to {output}", err=True)
    else:
        write_export(rows, fmt, sys.stdout)


@cli.command()
# No -v: the console's engine logs in its worker process, and log lines on
# this process's stderr would be drawn over the screen.
@options(LEDGER, API, SINK, "concurrency", "lease_seconds", SEND, RECOVER, POLL, "retention_days")
@click.option("--readonly", is_flag=True, help="Watch only: every mutating action is hidden.")
@click.option(
    "--interval",
    default=2.0,
    show_default=True,
    type=float,
    help="Seconds between the console's reclaim passes.",
)
def console(readonly: bool, interval: float, **kw: Any) -> None:
    """The operator console on a ledger (also: bare `reclaim-tui`)."""
    from reclaim_tui.tui.launch import run_console

    try:
        settings = settings_from(kw)
        if not readonly:
            _refuse_first_run(settings)
        run_console(settings, readonly=readonly, interval=interval)
    except ReclaimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(_exit_code(exc))


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
    "--jobs", "job_count", default=36, show_default=True, type=int, help="Demo jobs to seed."
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


cli.add_command(emulator_command)


def main() -> None:
    cli(prog_name="reclaim-tui")


if __name__ == "__main__":
    main()
