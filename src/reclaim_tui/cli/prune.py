"""`reclaim-tui prune`: delete finished jobs older than an age (with their
events and results), archived first when asked, confirmed on a terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from reclaim_tui.bootstrap import open_ledger
from reclaim_tui.cli.common import count_of, echo_json, json_option, run, settings_from
from reclaim_tui.cli.options import LEDGER, options
from reclaim_tui.core.export import iso_time
from reclaim_tui.core.ledger.identity import refuse_ledger_file
from reclaim_tui.core.ledger.prune import (
    DEFAULT_BATCH,
    PruneCount,
    count_prunable,
    prunable_statuses,
)
from reclaim_tui.core.ledger.prune import parse_age as prune_age
from reclaim_tui.core.ledger.prune import prune as prune_rows
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError

__all__ = ["parse_age", "prune"]


def parse_age(ctx: click.Context | None, param: click.Parameter | None, value: str) -> float:
    """`--older-than` (core/ledger/prune.py's parse_age as a click callback: exit 2)."""
    try:
        return prune_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from exc


@click.command()
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
    if archive is not None:  # before the question: the answer could not be used
        refuse_ledger_file("--archive", archive, settings.db)
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
        echo_json({"dry_run": False, "older_than_s": older_than, **report.as_json()})
        return
    by_status = " ".join(f"{k}={v}" for k, v in report.by_status.items())
    saved = f"; archived to {archive}" if archive is not None else ""
    click.echo(
        f"pruned {count_of(report.pruned, 'row')} ({by_status}) in {report.batches} batch(es),"
        f" in their status since before {iso_time(report.cutoff)}{saved}"
    )


def _print_prunable(found: PruneCount, older_than: float, *, dry_run: bool, as_json: bool) -> None:
    if as_json:
        echo_json({"dry_run": dry_run, "older_than_s": older_than, "pruned": 0, **found.as_json()})
        return
    if not found.count:
        click.echo(f"nothing to prune: no row in its status since before {iso_time(found.cutoff)}")
        return
    click.echo(f"would prune {_prunable_text(found)}")


def _prunable_text(found: PruneCount) -> str:
    by_status = " ".join(f"{k}={v}" for k, v in found.by_status.items())
    return (
        f"{count_of(found.count, 'row')} ({by_status}), in their status since"
        f" {iso_time(found.oldest)} (oldest) to {iso_time(found.newest)} (newest)"
    )


def _confirm_prune(found: PruneCount, older_than: float) -> None:
    """Ask on a terminal; elsewhere (cron, a pipe) refuse: a ConfigError (exit 2)."""
    if not _interactive():
        raise ConfigError(
            f"prune would delete {count_of(found.count, 'row')}: pass --yes to prune without"
            " a terminal to confirm on (or --dry-run to count them)"
        )
    if not click.confirm(f"prune {_prunable_text(found)}?", default=False, err=True):
        raise ConfigError("prune: not confirmed; nothing was deleted")


def _interactive() -> bool:
    """Whether someone can answer a question on this terminal (no one when
    stdin is closed: Python sets sys.stdin to None when fd 0 is)."""
    return sys.stdin is not None and sys.stdin.isatty()
