"""The commands on one row (or a few): `show`, `retry`, `cancel`, `adopt`,
`answer`, `recover` (orphans), `replay` (stored results to the sink)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.cli.common import (
    EXIT_API_UNAVAILABLE,
    NoApi,
    echo_json,
    json_option,
    print_report,
    reader_settings,
    resolve_key,
    run,
    settings_from,
)
from reclaim_tui.cli.options import API, LEDGER, PASS, RECOVER, SINK, options
from reclaim_tui.core.engine import cancelling
from reclaim_tui.core.export import export_record, job_record, row_dict
from reclaim_tui.core.models import Actor, Row, Status, StoredResult
from reclaim_tui.errors import BackendError, ConfigError, OperatorError

__all__ = ["adopt", "answer", "cancel", "recover", "replay", "retry", "show"]


@click.command()
@options("db")
@click.argument("idem")
@json_option
@run
async def show(db: str, idem: str, as_json: bool) -> None:
    """A row, its timeline and its stored result (IDEM may be a unique prefix)."""
    async with open_ledger(reader_settings(db), readonly=True, create=False) as ledger:
        idem = await resolve_key(ledger, idem)
        row = await ledger.get(idem)
        events = await ledger.events(idem)
        result = await ledger.result(idem)
    assert row is not None
    usd, cost = _cost(row, result)
    if as_json:
        echo_json({**job_record(row, result, events), "cost_usd": usd})
        return
    for name, value in row_dict(row).items():
        if name.endswith(("_at", "_until", "state_since")) and isinstance(value, float):
            value = _when(value) if value else "-"
        click.echo(f"{name:>13}: {value if value is not None else '-'}")
    click.echo(f"{'cost':>13}: {cost}")
    click.echo("\ntimeline:")
    # As wide as the longest actor shown ("console-loop"), at least 8.
    width = max([8, *(len(ev.actor) for ev in events)])
    for ev in events:
        when = _when(ev.at)
        arrow = f"{ev.from_status or '∅'} → {ev.to_status}"
        click.echo(f"  {when}  {ev.actor:<{width}} {arrow:<24} {ev.note}")
    if result is not None:
        click.echo(f"\nresult ({result.interaction_id}, usage {json.dumps(result.usage)}):")
        click.echo(result.output_text)


def _cost(row: Row, result: StoredResult | None) -> tuple[float | None, str]:
    """The row's cost from its stored usage (`costs`' price table), and how
    it is said: unknown, never $0, when there is no result or no price."""
    from reclaim_tui.core.costs import cost_of, format_usd, load_prices

    if result is None:
        return None, "unknown (no result stored: never sent, or in flight)"
    try:
        prices = load_prices()
    except ConfigError as exc:
        return None, f"unknown ({exc})"
    usd = cost_of(result.usage, row.model, prices)
    if usd is None:
        return None, f"unknown (no token counts, or no price for {row.model})"
    return usd, f"{format_usd(usd)} (prices as of {prices.as_of}, {prices.source})"


def _when(at: float) -> str:
    """UTC, said so (the console's spelling): a local time without its zone misleads."""
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


@click.command()
# No --lease-seconds: it must outlast an API call (--request-timeout), which
# replay never makes; its leases are renewed while its sink runs.
@options(LEDGER, SINK, "concurrency", "verbose")
@json_option
@run
async def replay(as_json: bool, **kw: Any) -> None:
    """Deliver stored results of done-but-unconsumed rows (never calls the API)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, backend=NoApi(), create=False) as engine:
        report = await engine.replay()
    print_report(report, False, as_json=as_json)


@click.command()
@options(LEDGER, API, PASS, RECOVER, "max_attempts", "webhook_url")
@click.option("--force", is_flag=True, help="Also held orphans and ones not yet due.")
@click.argument("idems", nargs=-1)
@json_option
@run
async def recover(force: bool, idems: tuple[str, ...], as_json: bool, **kw: Any) -> None:
    """Settle orphans: adopt by label where possible, else the orphan policy
    (resubmit marks them for resend: the next tick sends them)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, create=False) as engine:
        # Each key once, in the order first given (two prefixes of one key
        # too): a key named twice is recovered, or refused, once.
        given = dict.fromkeys(i.strip() for i in idems)
        resolved = [await resolve_key(engine.ledger, i) for i in given]
        keys = list(dict.fromkeys(resolved)) or None
        if keys:
            rows = await engine.ledger.get_many(keys)
            refused = [why for k in keys if (why := _why_not_recovered(rows[k], force))]
            if refused:  # named keys that recovery would leave: said, nothing done
                raise OperatorError("; ".join(refused))
        report = await engine.recover_orphans(force=force, idems=keys)
    # An orphan "resubmitted" by recovery is only marked for resend here (a
    # tick's later send step is what sends it): counted under that name.
    marked = report.counts.pop("resubmitted", 0)
    summary = _marked_for_resend(report.summary(), marked)
    extra = {"marked_for_resend": marked}
    print_report(report, False, settings, summary=summary, as_json=as_json, extra=extra)


def _why_not_recovered(row: Row, force: bool) -> str | None:
    """Why recovery leaves the named row as it is (None: it settles it). An
    orphan is a row whose create (or follow-up turn) was sent and whose
    outcome is unknown: `reserving` or `submitted` with a call in flight."""
    status = row.status.value
    if row.status not in (Status.RESERVING, Status.SUBMITTED) or not row.inflight:
        waiting = row.status == Status.RESERVING
        what = (
            "waiting to be sent, no create of unknown outcome"
            if waiting
            else "its outcome is known"
        )
        return (
            f"{row.idem} is {status}, not an orphan ({what}); recover settles rows whose"
            " create's outcome is unknown (`status` counts them as orphans)"
        )
    if row.held and row.status == Status.RESERVING and not force:
        return f"{row.idem} is an orphan held for an operator: add --force to recover it"
    return None


def _marked_for_resend(summary: str, marked: int) -> str:
    """recover's summary line, with the orphans marked for resend."""
    if not marked:
        return summary
    note = f"marked for resend={marked} (the next tick sends them)"
    return note if summary == "idle" else f"{summary} {note}"


@click.command()
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
    async with open_engine(settings, actor=Actor.CLI, backend=NoApi(), create=False) as engine:
        row = await engine.operator.retry(await resolve_key(engine.ledger, idem), actor=Actor.CLI)
    if as_json:
        echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} (marked for resend: the next tick sends it)")


@click.command()
@options(LEDGER, API, "emulator_lookup")
@click.argument("idem")
@json_option
@run
async def cancel(idem: str, as_json: bool, **kw: Any) -> None:
    """Cancel a reserving or submitted job (and ask the API to cancel it)."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, create=False) as engine:
        row = await engine.operator.cancel(await resolve_key(engine.ledger, idem), actor=Actor.CLI)
    if as_json:
        echo_json(export_record(row))
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


@click.command()
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
    async with open_engine(settings, actor=Actor.CLI, create=False) as engine:
        key = await resolve_key(engine.ledger, idem)
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
        echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} ({row.handle})")


@click.command()
@options(LEDGER, API)
@click.argument("idem")
@click.argument("interaction_id")
@json_option
@run
async def adopt(idem: str, interaction_id: str, as_json: bool, **kw: Any) -> None:
    """Attach an existing INTERACTION_ID to an orphaned or failed job."""
    settings = settings_from(kw)
    async with open_engine(settings, actor=Actor.CLI, create=False) as engine:
        key = await resolve_key(engine.ledger, idem)
        row = await engine.operator.adopt(key, interaction_id, actor=Actor.CLI)
    if as_json:
        echo_json(export_record(row))
        return
    click.echo(f"{row.idem}: {row.status.value} ({row.handle})")
