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
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel

from reclaim_tui.core.chains import chain_order
from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.core.export import write_export
from reclaim_tui.core.jobsfile import check_job, parse_jobs_bytes
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import View
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import JobsFileError, ReclaimError
from reclaim_tui.runner.commands import RowCommand, RowsOutcome
from reclaim_tui.tui.messages import ActionFinished, SubmitFailed, SubmitFinished, SubmitProgressed
from reclaim_tui.tui.questions import rows_word
from reclaim_tui.tui.screens.export import ExportRequest
from reclaim_tui.tui.screens.submit import SubmitRequest

__all__ = [
    "SUBMIT_CHUNK",
    "Done",
    "OperatorEngine",
    "export_path",
    "export_rows",
    "recover_rows",
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

    async def prune(
        self,
        statuses: Sequence[str],
        older_than_s: float,
        archive: str | None,
        at: float | None = None,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Done:
    """What an action came to: the line the operator reads, and the rows it
    is done with (they are unmarked)."""

    finished: ActionFinished
    unmark: tuple[str, ...] = ()


def export_path(request: ExportRequest, files_dir: Path) -> Path:
    """The absolute file the request names (a relative one is under `files_dir`)."""
    path = Path(request.path).expanduser()
    return path if path.is_absolute() else files_dir / path


# -- through the engine -----------------------------------------------------------------------
def _outcome(verb: str, outcome: RowsOutcome) -> ActionFinished:
    applied, refused = outcome.applied, outcome.refused
    if outcome.pending:
        # Cancelled here, not on the API: it may still run and bill.
        count = len(outcome.pending)
        return ActionFinished(
            f"{verb} here, but the API's cancel failed for {count:,} {rows_word(count)}"
            f" (first: {outcome.pending[0]}); marked cancel pending, the loop asks again",
            "error",
        )
    if not refused:
        return ActionFinished(f"{verb}: {applied} {rows_word(applied)}")
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


async def run_prune(
    host: OperatorEngine, statuses: Sequence[str], older_than_s: float, archive: Path, at: float
) -> Done:
    """`:prune`, through the engine host (it owns the ledger's writes); the
    age counts from `at`, the instant the confirmed count was made."""
    try:
        await asyncio.to_thread(archive.parent.mkdir, parents=True, exist_ok=True)
        report = await host.prune(statuses, older_than_s, str(archive), at)
    except (ReclaimError, OSError) as exc:
        return Done(ActionFinished(f"prune failed: {exc}", "error"))
    pruned = int(report.get("pruned", 0))
    return Done(ActionFinished(f"pruned {pruned:,} {rows_word(pruned)}; archived to {archive}"))


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
        # A typed prompt gets the checks of a jobs file's line (size, model).
        fields = {"input": request.prompt, "model": request.model or default_model}
        return [check_job(fields, source="the prompt", default_model=default_model)]
    data = await asyncio.to_thread(Path(request.path).expanduser().read_bytes)
    # As the CLI reads a file: lines end at \n only (U+2028 may be in a string).
    return parse_jobs_bytes(data, source=request.path, default_model=default_model)


async def submit_jobs(
    host: OperatorEngine,
    request: SubmitRequest,
    default_model: str,
    progress: Callable[[Message], object],
    in_ledger: Callable[[Sequence[str]], Awaitable[Collection[str]]] | None = None,
) -> SubmitFinished | SubmitFailed:
    """Reserve the request's jobs through the engine, a chunk at a time, each
    chunk reported to `progress`. One prompt goes out now; a file is left to
    the loop. `in_ledger`: which of some keys the ledger holds, to refuse a
    job whose `previous` names no job before the first chunk is reserved
    (the engine checks each chunk alone, after the chunks before it)."""
    try:
        jobs = await _read_jobs(request, default_model)
    except (OSError, UnicodeDecodeError) as exc:
        return SubmitFailed(f"cannot read {request.path}: {exc}")
    except JobsFileError as exc:
        if not request.path:  # the prompt: one problem, no lines to name
            return SubmitFailed(f"the prompt was not reserved: {exc.problems[0][1]}")
        return SubmitFailed(str(exc))
    if not jobs:  # said in the dialog, which stays open for another path
        return SubmitFailed(f"{request.path} has no jobs (blank lines and # comments only)")
    if in_ledger is not None:
        dangling = await _dangling(jobs, in_ledger)
        if dangling:
            return SubmitFailed(f"{request.path}: nothing was reserved: {dangling}")
    inserted = present = 0
    jobs = chain_order(jobs)  # a chunk's `previous` jobs are reserved before it
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
    if request.path:
        return SubmitFinished(f"submitted: {inserted} reserved{tail}")
    idem = idempotency_key(jobs[0])
    return SubmitFinished(f"submitted {idem}: {inserted} reserved{tail} (shown: esc clears)", idem)


async def _dangling(
    jobs: Sequence[JobSpec], in_ledger: Callable[[Sequence[str]], Awaitable[Collection[str]]]
) -> str:
    """The first job whose `previous` is neither a job of `jobs` nor in the
    ledger, said as the engine says it; "" when there is none."""
    named = {j.previous for j in jobs if j.previous is not None}
    if not named:
        return ""  # no key hashed on the console's loop for a file without chains
    outside = sorted(named - {idempotency_key(job) for job in jobs})
    if not outside:
        return ""
    held = set(await in_ledger(outside))
    for number, job in enumerate(jobs, start=1):
        if job.previous is not None and job.previous in outside and job.previous not in held:
            return (
                f"job {number} of {len(jobs)} ({idempotency_key(job)!r}): its 'previous'"
                f" {job.previous!r} is the key of no job, here or in the ledger"
                " (is the key mistyped?)"
            )
    return ""


# -- through the reader -----------------------------------------------------------------------
async def export_rows(
    reader: ConsoleReader, view: View, request: ExportRequest, files_dir: Path
) -> Done:
    """Write every row of `view` to the requested file, a batch at a time, as
    `reclaim-tui export` does: with each stored result's text and usage."""
    path = export_path(request, files_dir)
    written = 0
    try:
        out = await asyncio.to_thread(path.open, "w", encoding="utf-8", newline="")
        try:
            async for rows in reader.iter_view(view):
                results = await reader.background.results([r.idem for r in rows])
                buffer = io.StringIO()
                write_export(rows, request.fmt, buffer, results=results, header=written == 0)
                await asyncio.to_thread(out.write, buffer.getvalue())
                written += len(rows)
        finally:
            await asyncio.to_thread(out.close)
    except OSError as exc:
        return Done(ActionFinished(f"export failed: {exc}", "error"))
    return Done(ActionFinished(f"exported {written:,} {rows_word(written)} to {path}"))
