"""The screens: `console` (the operator console on a ledger, or attached to a
running service) and `demo` (the console on the embedded emulator). Textual
is imported only when one of them runs."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import click

from reclaim_tui.cli.common import exit_code, settings_from
from reclaim_tui.cli.options import (
    API,
    CREATE,
    DAY,
    LEDGER,
    POLL,
    RECOVER,
    SEND,
    SINK,
    Finite,
    options,
)
from reclaim_tui.config import Settings
from reclaim_tui.core.ledger.opening import ledger_file, same_ledger
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.errors import ConfigError, ReclaimError

__all__ = ["console", "demo"]


@click.command()
# No -v: the console's engine logs in its worker process, and log lines on
# this process's stderr would be drawn over the screen.
@options(
    LEDGER, CREATE, API, SINK, "concurrency", "lease_seconds", SEND, RECOVER, POLL, "retention_days"
)
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
        # A pace from the settings file wins over a --interval the operator typed: said then only.
        source = click.get_current_context().get_parameter_source("interval")
        given = source is not click.core.ParameterSource.DEFAULT
        run_console(
            settings, readonly=readonly, interval=interval, attach=attach, interval_given=given
        )
    except ReclaimError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exit_code(exc))


def _attached(settings: Settings, attach: str) -> Settings:
    """The console reads the ledger the service writes: the service's `db`
    (and `out`); a --db naming another ledger is refused, not followed."""
    from click.core import ParameterSource

    from reclaim_tui.runner.control import service_settings

    theirs = asyncio.run(service_settings(attach))
    db, out = str(theirs.get("db") or settings.db), str(theirs.get("out") or settings.out)
    source = click.get_current_context().get_parameter_source("db")
    if source not in (None, ParameterSource.DEFAULT) and not same_ledger(settings.db, db):
        raise ConfigError(
            f"--db {shown_db(settings.db)}: the service at {attach} runs on {shown_db(db)};"
            " leave --db out to watch the service's ledger"
        )
    return settings.with_(db=db, out=out)


def _refuse_first_run(settings: Settings) -> None:
    """No ledger and no API to reach (bare `reclaim-tui` in an empty folder):
    a ConfigError that points at the demo, which needs neither."""
    from reclaim_tui.core.gemini import resolve_api_key

    file = ledger_file(settings.db)
    if file is None or file.exists() or settings.base_url or resolve_api_key(settings.api_key):
        return
    raise ConfigError(
        f"no ledger at {shown_db(settings.db)} and no Gemini API key (--api-key, GEMINI_API_KEY or"
        " GOOGLE_API_KEY). To try it without a key: `reclaim-tui demo` (the console on an"
        " embedded emulator); every command: `reclaim-tui --help`"
    )


@click.command()
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
        sys.exit(exit_code(exc))
    if app.return_code:
        sys.exit(app.return_code)
