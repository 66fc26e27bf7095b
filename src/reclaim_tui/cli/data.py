"""The commands that read or copy a ledger whole: `status` (counts and ages),
`export` (JSON Lines or CSV), `migrate` (SQLite ⇄ PostgreSQL, then proved).
`costs` and `prune` have modules of their own (cli/costs.py, cli/prune.py)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import click

from reclaim_tui.bootstrap import open_ledger
from reclaim_tui.cli.common import count_of, echo_json, json_option, reader_settings, run
from reclaim_tui.cli.options import options
from reclaim_tui.cli.output_file import written_whole
from reclaim_tui.cli.tables import Column, text_table
from reclaim_tui.core.export import iso_time, write_export
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import View
from reclaim_tui.core.ledger.identity import refuse_ledger_file
from reclaim_tui.core.ledger.opening import ledger_file, same_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.registry import Process, read_processes
from reclaim_tui.core.ledger.retention import Attention, attention
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.core.models import Row, Status
from reclaim_tui.errors import ConfigError, LedgerError

if TYPE_CHECKING:
    from reclaim_tui.core.ledger.transfer import TableCheck

__all__ = ["export", "migrate", "status"]


@click.command()
@options("db")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@options("retention_days")
@run
async def status(db: str, as_json: bool, retention_days: float) -> None:
    """Counts by status and the oldest age in each."""
    async with open_ledger(reader_settings(db), readonly=True, create=False) as ledger:
        counts = await ledger.counts()
        orphans, orphans_since = await _orphans(ledger)
        seen = await attention(ledger, retention_days)
        now = ledger.clock.now()
        paused = await _paused(ledger, now)
        text_index = ledger.text_index_note
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
    data["paused"] = {"count": len(paused), "processes": [_process(p) for p in paused]}
    if text_index:
        click.echo(f"note: {text_index}", err=True)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    # Columns by f-string, not cli/tables.py: Rich is not among what a read-only
    # command imports at start-up (tests/unit/test_startup.py).
    click.echo(f"{'status':<11} {'count':>9}  oldest")
    for name, v in data.items():
        if name in (
            "past_retention",
            "asking",
            "unknown_status",
            "not_found",
            "not_found_held",
            "plans_ready",
            "paused",
        ):
            continue
        age = v["oldest_age_s"]
        click.echo(f"{name:<11} {v['count']:>9}  {_fmt_age(age) if age is not None else '-'}")
    for line in _attention_lines(seen, retention_days):
        click.echo(line, err=True)
    for p in paused:
        how = "`reclaim-tui service resume SOCK` (its --control socket)"
        how = how if p.kind == "service" else "P in that console"
        click.echo(
            f"{p.kind} pid {p.pid} on {p.host} is paused: it runs no pass until resumed ({how})",
            err=True,
        )


async def _paused(ledger: Ledger, now: float) -> list[Process]:
    """The live processes of the registry whose passes are paused (a ledger
    older than the registry has none to say)."""
    try:
        found = await read_processes(ledger, now)
    except LedgerError:  # the port's, for either engine's driver error
        return []
    return [p for p in found if p.state == "paused" and p.condition in ("alive", "stale")]


def _process(p: Process) -> dict[str, Any]:
    return {
        "kind": p.kind,
        "host": p.host,
        "pid": p.pid,
        "owner": p.owner,
        "condition": p.condition,
    }


@click.command()
@click.option(
    "--from", "source", required=True, metavar="DB",
    help="The ledger to copy: a SQLite file or a postgresql:// URL (not changed).",
)  # fmt: skip
@click.option(
    "--to", "target", required=True, metavar="DB",
    help="The ledger to copy into: created when new; it may hold only the source's rows.",
)  # fmt: skip
@click.option(
    "--batch", default=2000, show_default=True, type=click.IntRange(1, 100_000),
    help="Rows per transaction in the target.",
)  # fmt: skip
@click.option("--check", "check_only", is_flag=True, help="Only compare the two ledgers.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--schema", default=None, envvar="RECLAIM_PG_SCHEMA",
    help="PostgreSQL: the schema of both sides' tables (env RECLAIM_PG_SCHEMA).",
)  # fmt: skip
@click.option("--from-schema", default=None, help="PostgreSQL: the source's schema.")
@click.option("--to-schema", default=None, help="PostgreSQL: the target's schema.")
@run
async def migrate(
    source: str,
    target: str,
    batch: int,
    check_only: bool,
    as_json: bool,
    schema: str | None,
    from_schema: str | None,
    to_schema: str | None,
) -> None:
    """Copy a ledger to another engine (SQLite ⇄ PostgreSQL), then prove it.

    Jobs, events, results and the webhook inbox are copied with their ids, a
    batch per transaction; running it again finishes a copy that was cut
    short and writes nothing once it is whole. A target holding any row that
    is not the source's (another ledger) is refused before anything is
    written (exit 2). Then every row of every table is compared, column by
    column: exit 0 only when the target holds exactly the source. Stop what
    writes to the source first (ticks, service, console).
    """
    from reclaim_tui.core.ledger.transfer import compare, copy_ledger

    from_schema, to_schema = from_schema or schema, to_schema or schema
    # One file however it is spelt (./l.db, a link to it); a SQLite file has no schema.
    if same_ledger(source, target) and (
        from_schema == to_schema or ledger_file(source) is not None
    ):
        raise ConfigError("--from and --to name the same ledger")
    async with contextlib.AsyncExitStack() as stack:
        with _in_schema(from_schema):
            src = await stack.enter_async_context(
                open_ledger(reader_settings(source), readonly=True, create=False)
            )
        with _in_schema(to_schema):
            dst = await stack.enter_async_context(
                open_ledger(
                    # Starting the target ledger is what migrate is asked to do: no --create.
                    reader_settings(target).with_(create_ledger=True),
                    create=not check_only,
                )
            )
        copies = [] if check_only else await copy_ledger(src, dst, batch=batch)
        checked = await compare(src, dst)
    source, target = _named(source, src), _named(target, dst)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "source": source,
                    "target": target,
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
        columns: list[Column] = [("table", "left"), ("source", "right"), ("target", "right")]
        columns += [("written", "right"), ("check", "left")]
        rows = [
            (t.name, t.source, t.target, written.get(t.name, "-"), _verdict(t))
            for t in checked.tables
        ]
        click.echo(text_table(columns, rows))
        for behind in checked.sequences:
            click.echo(f"sequence behind: {behind}", err=True)
        click.echo(
            f"{target} holds every row of {source}"
            if checked.same
            else f"error: {target} does not hold exactly {source}",
            err=not checked.same,
        )
    if not checked.same:
        sys.exit(1)


@contextlib.contextmanager
def _in_schema(schema: str | None) -> Iterator[None]:
    """A PostgreSQL ledger opened here uses `schema` (its side's); the
    environment is as it was afterwards."""
    if schema is None:
        yield
        return
    before = os.environ.get("RECLAIM_PG_SCHEMA")
    os.environ["RECLAIM_PG_SCHEMA"] = schema
    try:
        yield
    finally:
        if before is None:
            del os.environ["RECLAIM_PG_SCHEMA"]
        else:
            os.environ["RECLAIM_PG_SCHEMA"] = before


def _named(db: str, ledger: Ledger) -> str:
    """The ledger as the summary names it: where, and its schema on PostgreSQL."""
    schema = getattr(ledger, "schema", None)
    return f"{shown_db(db)} (schema {schema})" if schema else shown_db(db)


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


def _verdict(check: TableCheck) -> str:
    return "same" if check.same else f"{check.different} differ: {', '.join(check.differing[:5])}"


def _fmt_age(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


@click.command()
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
    if output:
        refuse_ledger_file("--output", output, db)
    written = 0
    async with open_ledger(reader_settings(db), readonly=True, create=False) as ledger:
        with written_whole(output) if output else _stdout() as out:
            async for rows in _export_pages(ledger, only):
                results = await ledger.results([r.idem for r in rows])
                write_export(rows, fmt, out, results=results, header=written == 0)
                written += len(rows)
            if fmt == "csv" and written == 0:
                write_export([], fmt, out)
    if as_json:
        echo_json({"rows": written, "format": fmt, "status": only, "output": output})
    elif output:
        click.echo(f"{count_of(written, 'row')} written to {output}", err=True)


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
