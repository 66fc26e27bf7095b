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
import json
import os
import shlex
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.notifications import SeverityLevel

from reclaim_tui.core.cost_estimate import Estimate
from reclaim_tui.core.costs import format_usd
from reclaim_tui.core.engine.engine import PassReport
from reclaim_tui.core.export import write_export
from reclaim_tui.core.jobsfile import check_job, parse_jobs_bytes
from reclaim_tui.core.ledger.prune import PruneCount
from reclaim_tui.core.ledger.queries import ConsoleReader
from reclaim_tui.core.ledger.views import View
from reclaim_tui.core.models import JobSpec, Row, Status
from reclaim_tui.core.row_notes import ASKS, PLAN_READY
from reclaim_tui.errors import JobsFileError, ReclaimError
from reclaim_tui.runner.commands import RowCommand, RowsOutcome
from reclaim_tui.tui.messages import ActionFinished, SubmitFailed, SubmitFinished, SubmitProgressed
from reclaim_tui.tui.screens.export import ExportRequest
from reclaim_tui.tui.screens.submit import SubmitRequest

__all__ = [
    "CANCELLABLE",
    "RETRYABLE",
    "SUBMIT_CHUNK",
    "Checked",
    "Done",
    "OperatorEngine",
    "adopt_refusal",
    "answer_refusal",
    "asked",
    "cancel_question",
    "check_rows",
    "export_file_name",
    "export_path",
    "export_rows",
    "export_summary",
    "pretty_json",
    "recover_question",
    "recover_rows",
    "replay_question",
    "replay_rows",
    "retry_question",
    "run_rows",
    "run_viewer",
    "submit_jobs",
    "viewer_argv",
    "write_viewing_file",
]

#: Jobs reserved per engine command while a file is submitted (progress moves per chunk).
SUBMIT_CHUNK = 500
#: The statuses retry and cancel apply to (core/engine/operator.py's rule). The
#: engine stays the judge; the console checks first so that it never asks
#: about rows the engine would refuse.
RETRYABLE = (Status.FAILED, Status.CANCELLED)
CANCELLABLE = (Status.RESERVING, Status.SUBMITTED)


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


def _rows(count: int) -> str:
    return f"row{'s' if count != 1 else ''}"


# -- checks and questions (before anything irreversible) --------------------------------------
@dataclass(frozen=True)
class Checked:
    """The targets of a row action split into those it applies to and the rest."""

    verb: str  # "retry", "cancel"
    applies_to: tuple[Status, ...]
    eligible: list[str]
    #: The others, by what they are ("consumed", "gone").
    left: Counter[str]
    #: The first of the others, to name it when it is the only target.
    first_left: str = ""

    @property
    def total(self) -> int:
        return len(self.eligible) + self.left.total()

    def left_text(self) -> str:
        """'1 is consumed, 2 are submitted'."""
        return ", ".join(
            f"{n:,} {'is' if n == 1 else 'are'} {what}" for what, n in self.left.most_common()
        )

    def refusal(self) -> str:
        """Why nothing can be done (when `eligible` is empty)."""
        allowed = "/".join(s.value for s in self.applies_to)
        if self.total == 1:
            what = self.left.most_common(1)[0][0]
            return f"{self.first_left} is {what}; {self.verb} applies to {allowed} rows"
        past = {"retry": "retried", "cancel": "cancelled"}.get(self.verb, self.verb)
        return (
            f"none of the {self.total:,} marked rows can be {past}"
            f" ({self.left_text()}; {self.verb} applies to {allowed} rows)"
        )


async def check_rows(
    reader: ConsoleReader, verb: str, idems: Sequence[str], applies_to: tuple[Status, ...]
) -> Checked:
    """Which of `idems` the action applies to, as the ledger has them now."""
    rows = await reader.rows_by_idem(idems)
    eligible, left = [], Counter[str]()
    first_left = ""
    for idem in idems:
        row = rows.get(idem)
        if row is not None and row.status in applies_to:
            eligible.append(idem)
            continue
        left[row.status.value if row is not None else "gone"] += 1
        first_left = first_left or idem
    return Checked(verb, applies_to, eligible, left, first_left)


def _of_marked(checked: Checked) -> str:
    count = len(checked.eligible)
    if checked.left:
        return f"{count:,} of {checked.total:,} marked rows"
    return f"{count:,} marked {_rows(count)}"


def _left_alone(checked: Checked) -> str:
    return f"\n{checked.left_text()}: left alone." if checked.left else ""


def retry_question(
    checked: Checked, estimate: Estimate | None = None, *, marked: bool = True
) -> str:
    if not marked:
        return (
            f"Retry {checked.eligible[0]}?"
            "\nIt is sent to the API again with a fresh attempt budget: it spends again."
            + (f"\n{estimate_line(estimate)}" if estimate is not None else "")
        )
    return (
        f"Retry {_of_marked(checked)}?"
        "\nEach is sent to the API again with a fresh attempt budget: each one spends again."
        + (f"\n{estimate_line(estimate)}" if estimate is not None else "")
        + _left_alone(checked)
    )


def estimate_line(estimate: Estimate) -> str:
    """What sending the rows again would cost, and how the figure was made."""
    if not estimate.estimated:
        return f"Cost: unknown (no usage or price for {estimate.rows:,} {_rows(estimate.rows)})."
    how = []
    if estimate.from_usage:
        how.append(f"{estimate.from_usage:,} from their last usage")
    if estimate.from_average:
        how.append(f"{estimate.from_average:,} from their model's average")
    if estimate.unknown:
        how.append(f"{estimate.unknown:,} unknown, not counted")
    return f"Cost: about {format_usd(estimate.usd)} ({', '.join(how)})."


def prune_question(found: PruneCount, age: str, archive: Path) -> str:
    """The confirmation of `:prune`: how many rows, of which status, how old."""
    parts = ", ".join(f"{n:,} {status}" for status, n in found.by_status.items())
    return (
        f"Prune {found.count:,} {_rows(found.count)} ({parts}) in that state for more than {age}?"
        f"\nThey are appended to {archive} (fsync'd) before they leave the ledger,"
        " with their history and results."
    )


def cancel_question(checked: Checked, marked: bool) -> str:
    which = _of_marked(checked) if marked else checked.eligible[0]
    return f"Cancel {which}? Submitted jobs are cancelled at the API too." + _left_alone(checked)


def recover_question(count: int, marked: bool, estimate: Estimate | None = None) -> str:
    what = "marked" if marked else "orphan"
    cost = f"\nIf every one is sent again: {estimate_line(estimate)}" if estimate else ""
    return (
        f"Force recovery of {count:,} {what} {_rows(count)}?"
        "\nEach is looked up by label where the backend can, else sent again"
        " (a possible duplicate spend, recorded on the row)." + cost
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


def answer_refusal(row: Row) -> str | None:
    """Why `row` cannot be answered, or None when its interaction asks something."""
    if row.status != Status.SUBMITTED or not row.held or not row.handle:
        return (
            f"{row.idem} is not waiting for an answer (only a held submitted row"
            " whose interaction requires action is)"
        )
    return None


def asked(row: Row) -> str:
    """What the row's interaction asks, as the poll that held it recorded it."""
    return (row.last_error or "").removeprefix(ASKS).removeprefix(PLAN_READY)


def export_summary(tab_label: str, filter_text: str, files_dir: Path) -> str:
    summary = f"Rows of tab '{tab_label}'"
    summary += f" matching '{filter_text}'" if filter_text else ""
    return summary + f".\nA relative path is under {files_dir}."


def export_path(request: ExportRequest, files_dir: Path) -> Path:
    """The absolute file the request names (a relative one is under `files_dir`)."""
    path = Path(request.path).expanduser()
    return path if path.is_absolute() else files_dir / path


def export_file_name(now: float) -> str:
    return f"reclaim-export-{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now))}.jsonl"


# -- through the engine -----------------------------------------------------------------------
def _outcome(verb: str, outcome: RowsOutcome) -> ActionFinished:
    applied, refused = outcome.applied, outcome.refused
    if outcome.pending:
        # Cancelled here, not on the API: it may still run and bill.
        count = len(outcome.pending)
        return ActionFinished(
            f"{verb} here, but the API's cancel failed for {count:,} {_rows(count)}"
            f" (first: {outcome.pending[0]}); marked cancel pending, the loop asks again",
            "error",
        )
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
    return Done(ActionFinished(f"pruned {pruned:,} {_rows(pruned)}; archived to {archive}"))


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
) -> SubmitFinished | SubmitFailed:
    """Reserve the request's jobs through the engine, a chunk at a time, each
    chunk reported to `progress`. One prompt goes out now; a file is left to
    the loop."""
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
    return Done(ActionFinished(f"exported {written:,} {_rows(written)} to {path}"))


# -- the result, outside the console ------------------------------------------------------------
#: What runs when $PAGER / $EDITOR is unset or empty.
VIEWER_DEFAULTS = {"PAGER": "less", "EDITOR": "vi"}


def pretty_json(raw_json: str) -> str:
    """The stored interaction, indented (as stored when it is not JSON after all)."""
    try:
        return json.dumps(json.loads(raw_json), indent=2, ensure_ascii=False) + "\n"
    except ValueError:
        return raw_json


def viewer_argv(variable: str) -> list[str]:
    """$PAGER or $EDITOR as a command line (they may carry flags: `less -R`)."""
    value = os.environ.get(variable, "").strip() or VIEWER_DEFAULTS[variable]
    try:
        return shlex.split(value)
    except ValueError:
        return [value]


def write_viewing_file(text: str, name: str) -> Path:
    """A private temporary file holding `text`, its name ending in `name`
    (`<key>.md`); the caller removes it."""
    handle, path = tempfile.mkstemp(prefix="reclaim-", suffix=f"-{name}")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(text)
    return Path(path)


def run_viewer(variable: str, path: Path) -> str | None:
    """Run $PAGER / $EDITOR on `path` and wait for it (it has the terminal);
    what went wrong, or None."""
    argv = viewer_argv(variable)
    try:
        code = subprocess.run([*argv, str(path)], check=False).returncode
    except OSError as exc:
        reason = "not found" if isinstance(exc, FileNotFoundError) else str(exc)
        return f"${variable} ({argv[0]}) could not run: {reason}"
    return f"${variable} ({argv[0]}) exited with status {code}" if code else None
