"""The job commands: `tick` (one pass for cron), `run` (the loop as a
service), `submit` (reserve a jobs file's jobs and send them).

Each is a client of the Python API (reclaim_tui.api): `tick` and `submit`
call a `Ledger` that names them in its events, `run` runs the service
`Ledger.serve` runs (runner/service.py's `run_service`). What is theirs
alone is reading the jobs file, the idle tick's early exit and the printing."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, TextIO

import click

from reclaim_tui.cli.common import (
    echo_json,
    guarded,
    json_option,
    print_report,
    read_jobs,
    run,
    settings_from,
)
from reclaim_tui.cli.event_loop import loop_option, run_on_loop
from reclaim_tui.cli.options import (
    API,
    CREATE,
    DAY,
    ENGINE,
    LEDGER,
    PASS,
    SEND,
    Finite,
    options,
)
from reclaim_tui.cli.proxy_options import parse_trusted_proxies, proxy_options
from reclaim_tui.config import Settings
from reclaim_tui.core.ledger.identity import refuse_ledger_file
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.core.models import Actor, PassReport
from reclaim_tui.errors import ConfigError, LedgerError
from reclaim_tui.inbox import GOOGLE_JWKS_URL

__all__ = ["run_command", "submit", "tick"]


@click.command()
@options(ENGINE)
@click.option(
    "--jobs", "jobs_path", default=None, help="JSON Lines jobs file to submit first ('-' = stdin)."
)
@click.option("--fail-on-errors", is_flag=True, help="Exit 1 when any row recorded an error.")
@loop_option
@json_option
@guarded
def tick(jobs_path: str | None, fail_on_errors: bool, loop: str, as_json: bool, **kw: Any) -> None:
    """One headless pass for cron: recover, submit, send, reclaim, replay."""
    verbose = bool(kw.get("verbose"))
    settings = settings_from(kw)
    started = time.time()
    if not jobs_path and not verbose and _nothing_due(settings, started):
        # Nothing due: said before asyncio, aiosqlite, the engine and the sinks are
        # imported, most of an idle tick's CPU.
        finished, times = time.time(), None
        if as_json:
            from reclaim_tui.core.export import iso_time

            times = {"started_at": iso_time(started), "finished_at": iso_time(finished)}
        print_report(PassReport(), fail_on_errors, settings, as_json=as_json, extra=times)
        return
    run_on_loop(_tick)(settings, jobs_path, fail_on_errors, as_json, loop=loop)


def _nothing_due(settings: Settings, now: float) -> bool:
    """A look at the ledger before the full tick (core/ledger/sqlite/idle.py), where a
    tick with nothing due would do no more than it does: a SQLite ledger, the
    default sink, no webhooks (their inbox pass), the API key found (a missing
    one is the full tick's error, exit 2)."""
    if settings.sink or settings.webhook_url or ledger_file(settings.db) is None:
        return False
    from reclaim_tui.core.api_key import resolve_api_key

    if settings.base_url is None and not resolve_api_key(settings.api_key):
        return False
    from reclaim_tui.core.ledger.sqlite.idle import nothing_due

    return nothing_due(settings.db, busy_timeout=settings.busy_timeout, now=now)


async def _tick(
    settings: Settings, jobs_path: str | None, fail_on_errors: bool, as_json: bool
) -> None:
    from reclaim_tui.api.ledger import Ledger
    from reclaim_tui.core.export import iso_time
    from reclaim_tui.core.ledger.registry import Beacon

    jobs = read_jobs(jobs_path, settings) if jobs_path else []
    ledger = Ledger(settings, actor=Actor.TICK)
    await ledger.open(api=True)  # a missing API key is said before a ledger is created
    async with ledger:
        started = ledger.store.clock.now()
        # Its row in the process registry: up now, its pass and `stopped` at the end.
        beacon = Beacon(ledger.store, ledger.owner, "tick")
        await beacon.start()
        try:
            report = await ledger.tick(jobs)
        except LedgerError as exc:
            if exc.report is not None:
                # What the pass did before the ledger failed it, its rows
                # named; then the error and its exit code (4).
                finished = ledger.store.clock.now()
                times = {"started_at": iso_time(started), "finished_at": iso_time(finished)}
                _report_failed(exc.report, as_json=as_json, extra=times)
                beacon.record(exc.report)
            raise
        else:
            beacon.record(report)
        finally:
            await beacon.stopped()
        finished = ledger.store.clock.now()
    times = {"started_at": iso_time(started), "finished_at": iso_time(finished)}
    print_report(report, fail_on_errors, settings, as_json=as_json, extra=times)


def _report_failed(report: PassReport, *, as_json: bool, extra: dict[str, Any]) -> None:
    """The report of a pass a ledger error ended (its exit code follows)."""
    if as_json:
        from reclaim_tui.core.export import report_record

        echo_json(report_record(report, **extra))
    else:
        click.echo(report.summary())
    for idem, message in report.errors[:20]:
        click.echo(f"  {idem}: {message}", err=True)


@click.command("run")
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
@proxy_options(needs="--inbox-listen")
@click.option(
    "--control",
    default=None,
    type=click.Path(dir_okay=False),
    help="Unix socket (mode 0600) a console attaches to: `reclaim-tui console --attach PATH`.",
)
@click.option(
    "--metrics-listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve Prometheus metrics (/metrics) and a health check (/healthz) here,"
    " e.g. 127.0.0.1:9464.",
)
@loop_option
@run_on_loop
async def run_command(
    jobs_path: str | None,
    once: bool,
    log_path: str | None,
    idle_sleep: float,
    inbox_listen: str | None,
    inbox_secrets: tuple[str, ...],
    inbox_jwks_url: str,
    trusted_proxies: tuple[str, ...],
    forwarded_header: str,
    control: str | None,
    metrics_listen: str | None,
    **kw: Any,
) -> None:
    """The reclaim loop as a service (systemd-friendly): passes until SIGTERM.

    The first SIGTERM/SIGINT drains (the pass in progress finishes), a second
    cancels it. JSON lines say ready / pass / draining / stopped. Exit 0
    when drained, 130 when cancelled.
    """
    from reclaim_tui.cli.last_line import say_stopped
    from reclaim_tui.runner.service import InboxOptions, run_service
    from reclaim_tui.runner.service_log import service_log

    async def serve(out: TextIO | None) -> int:
        if idle_sleep <= 0:
            raise ConfigError("--idle-sleep must be positive")
        settings = settings_from(kw)
        jobs = read_jobs(jobs_path, settings) if jobs_path else []
        trusted = parse_trusted_proxies(trusted_proxies, forwarded_header)
        if trusted.networks and not inbox_listen:
            raise click.UsageError("--trusted-proxy is for the inbox: it needs --inbox-listen")
        inbox = None
        if inbox_listen:
            inbox = InboxOptions(
                inbox_listen, inbox_secrets, inbox_jwks_url or None, trusted=trusted
            )
        return await run_service(
            settings,
            jobs,
            once=once,
            inbox=inbox,
            idle_sleep=idle_sleep,
            control=control,
            log=out,
            metrics_listen=metrics_listen,
        )

    for option, path in (("--log", log_path), ("--control", control)):
        if path:  # a log appended to the ledger, a socket made beside it
            refuse_ledger_file(option, path, kw["db"])
    # Opened first: whatever ends the service (a bad flag or jobs file too)
    # is said in its log's last line.
    with contextlib.ExitStack() as files:
        log = files.enter_context(service_log(log_path)) if log_path else None
        try:
            code = await serve(log)
        except (Exception, KeyboardInterrupt) as exc:
            say_stopped(log or sys.stderr, exc)
            raise
    if code:
        sys.exit(code)


@click.command()
@options(LEDGER, CREATE, API, PASS, "lanes", SEND)
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
    jobs = read_jobs(jobs_path, settings)
    if not jobs and not as_json:
        click.echo(f"no jobs in {jobs_path} (blank lines and # comments only): nothing reserved")
        return
    from reclaim_tui.api.ledger import Ledger

    # --no-send: for a producer beside a running service, which sends from its warm
    # client (a second cold process would pay the SDK's import to send them).
    ledger = Ledger(settings, actor=Actor.CLI)
    await ledger.open(sink=True, api=not no_send)
    async with ledger:
        report = await ledger.reserve(jobs, send=not no_send)
    if as_json:
        print_report(report, False, settings, as_json=True)
        return
    click.echo(
        f"{report.counts['inserted']} reserved, {report.counts['already_present']} "
        f"already in the ledger; {report.summary()}"
    )
    if report.unavailable is not None:
        print_report(PassReport(unavailable=report.unavailable), False, settings)
