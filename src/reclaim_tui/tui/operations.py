"""The operator's actions, as plain functions over the engine host and the reader.

Each one goes through the engine host (actor "console", so the engine writes
the row's event; for real backends in the engine's worker process). The main
screen asks, confirms, and runs them in its workers; what one comes to is a
`Done`. An OperatorError is the engine saying no: it becomes the line the
operator reads, and the ledger is unchanged.

They see the engine host through `OperatorEngine`, the part of it they use;
the app starts, ticks and stops the host itself.
"""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from textual.message import Message
from textual.notifications import SeverityLevel

from reclaim_tui.core.engine import PassReport
from reclaim_tui.core.export import write_export
from reclaim_tui.core.jobsfile import parse_jobs
from reclaim_tui.core.models import JobSpec, Row, Status
from reclaim_tui.core.queries import ConsoleReader, View
from reclaim_tui.errors import JobsFileError, ReclaimError
from reclaim_tui.runner.commands import RowCommand, RowsOutcome
from reclaim_tui.tui.messages import ActionFinished, SubmitFailed, SubmitFinished, SubmitProgressed
from reclaim_tui.tui.screens.export import ExportRequest
from reclaim_tui.tui.screens.submit import SubmitRequest

__all__ = [
    "SUBMIT_CHUNK",
    "Done",
    "OperatorEngine",
    "adopt_refusal",
    "cancel_question",
    "export_file_name",
    "export_rows",
    "export_summary",
    "recover_question",
    "recover_rows",
    "replay_question",
    "replay_rows",
    "run_rows",
    "submit_jobs",
]

#: Jobs reserved per engine command while a file is submitted (progress moves per chunk).
SUBMIT_CHUNK = 500


class OperatorEngine(Protocol):
    """What the operator's actions ask of the engine host (runner.host.EngineHost)."""

    async def rows(self, command: RowCommand) -> RowsOutcome: ...

    async def recover(self, idems: Sequence[str]) -> PassReport: ...

    async def replay(self, idems: Sequence[str] | None) -> PassReport: ...

    async def submit(self, jobs: Sequence[JobSpec], *, send: bool) -> PassReport: ...


@dataclass(frozen=True)
class Done:
    """What an action came to: the line the operator reads, and the rows it
    is done with (they are unmarked)."""

    finished: ActionFinished
    unmark: tuple[str, ...] = ()


def _rows(count: int) -> str:
    return f"row{'s' if count != 1 else ''}"


# -- questions (asked before anything irreversible) ------------------------------------------
def cancel_question(targets: Sequence[str]) -> str:
    which = targets[0] if len(targets) == 1 else f"{len(targets):,} marked rows"
    return f"Cancel {which}? Submitted jobs are cancelled at the API too."


def recover_question(count: int, marked: bool) -> str:
    what = "marked" if marked else "orphan"
    return (
        f"Force recovery of {count:,} {what} {_rows(count)}?"
        "\nEach is looked up by label where the backend can, else sent again"
        " (a possible duplicate spend, recorded on the row)."
    )


def replay_question(marked: int, waiting: int) -> str:
    count = marked or waiting
    rows = f"{count:,} {'marked' if marked else 'done'} {_rows(count)}"
    return (
        f"Replay {rows} now from the stored results?"
        + (" Marked rows that are not done are left alone." if marked else "")
        + "\nThe sink runs again (idempotent by key); the API is not called."
        " Rows waiting out a sink back-off go now too, each tried once."
    )


def adopt_refusal(row: Row) -> str | None:
    """Why `row` cannot adopt an interaction, or None when it can."""
    if row.status not in (Status.RESERVING, Status.FAILED):
        return f"{row.idem} is {row.status}; adopt applies to reserving/failed rows"
    return None


def export_summary(tab_label: str, filter_text: str) -> str:
    summary = f"Rows of tab '{tab_label}'"
    return summary + (f" matching '{filter_text}'" if filter_text else "")


def export_file_name(now: float) -> str:
    return f"reclaim-export-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}.jsonl"


# -- through the engine -----------------------------------------------------------------------
def _outcome(verb: str, outcome: RowsOutcome) -> ActionFinished:
    applied, refused = outcome.applied, outcome.refused
    if not refused:
        return ActionFinished(f"{verb}: {applied} {_rows(applied)}")
    if not applied and len(refused) == 1:
        return ActionFinished(refused[0], "error")
    more = f" (first: {refused[0]})"
    return ActionFinished(f"{verb}: {applied} applied, {len(refused)} refused{more}", "warning")


async def run_rows(host: OperatorEngine, verb: str, command: RowCommand) -> Done:
    """Retry / Cancel / Adopt over the command's rows; refusals come back per row."""
    try:
        outcome = await host.rows(command)
    except ReclaimError as exc:
        return Done(ActionFinished(str(exc), "error"))
    return Done(_outcome(verb, outcome), tuple(command.idems) if outcome.applied else ())


async def recover_rows(host: OperatorEngine, idems: list[str]) -> Done:
    try:
        report = await host.recover(idems)
    except ReclaimError as exc:
        return Done(ActionFinished(f"orphan recovery failed: {exc}", "error"))
    return Done(ActionFinished(f"orphan recovery: {report.summary()}"), tuple(idems))


async def replay_rows(host: OperatorEngine, idems: list[str] | None) -> Done:
    """Replay the given done rows, or every done row (None), now."""
    try:
        report = await host.replay(idems)
    except ReclaimError as exc:
        return Done(ActionFinished(f"replay failed: {exc}", "error"))
    what = report.summary() if report.counts["replayed"] else "no done row to replay"
    severity: SeverityLevel = "warning" if report.counts["errors"] else "information"
    return Done(ActionFinished(f"replay: {what}", severity), tuple(idems or ()))


async def _read_jobs(request: SubmitRequest, default_model: str) -> list[JobSpec]:
    """The request's jobs: its one prompt, or its file's lines (OSError,
    UnicodeDecodeError and JobsFileError say why not)."""
    if not request.path:
        return [JobSpec(input=request.prompt, model=request.model)]
    text = await asyncio.to_thread(Path(request.path).expanduser().read_text, "utf-8")
    return parse_jobs(text.splitlines(), source=request.path, default_model=default_model)


async def submit_jobs(
    host: OperatorEngine,
    request: SubmitRequest,
    default_model: str,
    progress: Callable[[Message], object],
) -> SubmitFinished | SubmitFailed:
    """Reserve the request's jobs through the engine, a chunk at a time, each
    chunk reported to `progress`. One prompt goes out now; a file is left to
    the loop."""
    try:
        jobs = await _read_jobs(request, default_model)
    except (OSError, UnicodeDecodeError) as exc:
        return SubmitFailed(f"cannot read {request.path}: {exc}")
    except JobsFileError as exc:
        return SubmitFailed(str(exc))
    inserted = present = 0
    for start in range(0, len(jobs), SUBMIT_CHUNK):
        chunk = jobs[start : start + SUBMIT_CHUNK]
        try:
            report = await host.submit(chunk, send=not request.path)
        except ReclaimError as exc:
            return SubmitFailed(f"submit stopped after {start:,} jobs: {exc}")
        inserted += report.counts["inserted"]
        present += report.counts["already_present"]
        progress(SubmitProgressed(start + len(chunk), len(jobs)))
    tail = f", {present} already in the ledger" if present else ""
    return SubmitFinished(f"submitted: {inserted} reserved{tail}")


# -- through the reader -----------------------------------------------------------------------
async def export_rows(reader: ConsoleReader, view: View, request: ExportRequest) -> Done:
    """Write every row of `view` to the requested file, a batch at a time."""
    path = Path(request.path).expanduser()
    written = 0
    try:
        out = await asyncio.to_thread(path.open, "w", encoding="utf-8", newline="")
        try:
            async for rows in reader.iter_view(view):
                buffer = io.StringIO()
                write_export(rows, request.fmt, buffer)
                chunk = buffer.getvalue()
                if request.fmt == "csv" and written:
                    chunk = chunk.split("\n", 1)[1]  # one header, at the top
                await asyncio.to_thread(out.write, chunk)
                written += len(rows)
        finally:
            await asyncio.to_thread(out.close)
    except OSError as exc:
        return Done(ActionFinished(f"export failed: {exc}", "error"))
    return Done(ActionFinished(f"exported {written:,} rows to {path}"))
