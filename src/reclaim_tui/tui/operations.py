"""The operator's actions, mixed into the app.

Each one goes through the engine host (actor "console", so the engine writes
the row's event; for real backends in the engine's worker process), runs in
a Textual worker, and ends in an `ActionFinished` message. An OperatorError
is the engine saying no: it becomes a notification and the ledger is
unchanged.
"""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.notifications import SeverityLevel

from reclaim_tui.core.export import write_export
from reclaim_tui.core.jobsfile import parse_jobs
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.queries import View
from reclaim_tui.errors import JobsFileError, ReclaimError
from reclaim_tui.tui.engine_commands import RowsOutcome
from reclaim_tui.tui.messages import (
    ActionFinished,
    SubmitFailed,
    SubmitFinished,
    SubmitProgressed,
)
from reclaim_tui.tui.screens.adopt import AdoptScreen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.export import ExportRequest, ExportScreen
from reclaim_tui.tui.screens.submit import SubmitRequest, SubmitScreen

if TYPE_CHECKING:
    from reclaim_tui.tui.app import ReclaimApp

__all__ = ["OperatorActions"]

SUBMIT_CHUNK = 500


def _outcome(verb: str, outcome: RowsOutcome) -> ActionFinished:
    applied, refused = outcome.applied, outcome.refused
    if not refused:
        return ActionFinished(f"{verb}: {applied} row{'s' if applied != 1 else ''}")
    if not applied and len(refused) == 1:
        return ActionFinished(refused[0], "error")
    more = f" (first: {refused[0]})"
    return ActionFinished(f"{verb}: {applied} applied, {len(refused)} refused{more}", "warning")


class OperatorActions:
    """Mixin for ReclaimApp: the actions bound to s, r, c, o, a, R, ctrl+e, space, A."""

    # -- targets ---------------------------------------------------------------------
    def _targets(self: ReclaimApp) -> list[str]:
        if self.state.marks:
            return sorted(self.state.marks)
        current = self.table.current_idem()
        return [current] if current else []

    def action_refuse(self: ReclaimApp, what: str) -> None:
        self.notify(f"read-only console: {what} is disabled", severity="warning")

    # -- retry / cancel ------------------------------------------------------------------
    def action_retry(self: ReclaimApp) -> None:
        targets = self._targets()
        if not targets:
            self.notify("no row to retry", severity="warning")
            return
        self.run_rows("retried", "retry", targets)

    def action_cancel_jobs(self: ReclaimApp) -> None:
        targets = self._targets()
        if not targets:
            self.notify("no row to cancel", severity="warning")
            return
        which = targets[0] if len(targets) == 1 else f"{len(targets):,} marked rows"
        question = f"Cancel {which}? Submitted jobs are cancelled at the API too."

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_rows("cancelled", "cancel", targets)

        self.push_screen(ConfirmScreen("cancel", question, "Cancel jobs"), answered)

    @work(group="ops")
    async def run_rows(
        self: ReclaimApp, verb: str, op: str, idems: list[str], interaction_id: str | None = None
    ) -> None:
        assert self.host is not None
        try:
            outcome = await self.host.rows(op, idems, interaction_id)
        except ReclaimError as exc:
            self.post_message(ActionFinished(str(exc), "error"))
            return
        if outcome.applied:
            self.state.marks.difference_update(idems)
        self.post_message(_outcome(verb, outcome))

    # -- orphans / replay --------------------------------------------------------------------
    @work(group="ops")
    async def action_recover(self: ReclaimApp) -> None:
        assert self.reader is not None
        marked = sorted(self.state.marks)
        idems = marked or (await self.reader.matching_idems(View(orphans=True)))[0]
        if not idems:
            self.notify("no orphans to recover", severity="warning")
            return
        what = "marked" if marked else "orphan"
        question = (
            f"Force recovery of {len(idems):,} {what} row{'s' if len(idems) != 1 else ''}?"
            "\nEach is looked up by label where the backend can, else sent again"
            " (a possible duplicate spend, recorded on the row)."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.recover_rows(idems)

        self.push_screen(ConfirmScreen("recover orphans", question, "Recover"), answered)

    @work(group="ops")
    async def recover_rows(self: ReclaimApp, idems: list[str]) -> None:
        assert self.host is not None
        try:
            report = await self.host.recover(idems)
        except ReclaimError as exc:
            self.post_message(ActionFinished(f"orphan recovery failed: {exc}", "error"))
            return
        self.state.marks.difference_update(idems)
        self.post_message(ActionFinished(f"orphan recovery: {report.summary()}"))

    def action_replay(self: ReclaimApp) -> None:
        marked = sorted(self.state.marks)
        waiting = self.state.counts.get(Status.DONE.value, 0)
        if not marked and not waiting:
            self.notify("no done-but-unconsumed rows to replay", severity="warning")
            return
        count = len(marked) or waiting
        rows = f"{count:,} {'marked' if marked else 'done'} row{'s' if count != 1 else ''}"
        question = (
            f"Replay {rows} now from the stored results?"
            + (" Marked rows that are not done are left alone." if marked else "")
            + "\nThe sink runs again (idempotent by key); the API is not called."
            " Rows waiting out a sink back-off go now too, each tried once."
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self.replay_rows(marked or None)

        self.push_screen(ConfirmScreen("replay", question, "Replay"), answered)

    @work(group="ops")
    async def replay_rows(self: ReclaimApp, idems: list[str] | None) -> None:
        assert self.host is not None
        try:
            report = await self.host.replay(idems)
        except ReclaimError as exc:
            self.post_message(ActionFinished(f"replay failed: {exc}", "error"))
            return
        if idems:
            self.state.marks.difference_update(idems)
        what = report.summary() if report.counts["replayed"] else "no done row to replay"
        severity: SeverityLevel = "warning" if report.counts["errors"] else "information"
        self.post_message(ActionFinished(f"replay: {what}", severity))

    # -- adopt --------------------------------------------------------------------------------
    def action_adopt(self: ReclaimApp) -> None:
        row = self.table.current_row()
        if row is None:
            self.notify("no row to adopt for", severity="warning")
            return
        if row.status not in (Status.RESERVING, Status.FAILED):
            self.notify(
                f"{row.idem} is {row.status}; adopt applies to reserving/failed rows",
                severity="error",
            )
            return

        def answered(interaction_id: str | None) -> None:
            if interaction_id:
                self.run_rows(f"adopted {interaction_id} for", "adopt", [row.idem], interaction_id)

        self.push_screen(AdoptScreen(row.idem, row.status.value), answered)

    # -- submit -------------------------------------------------------------------------------
    def action_submit(self: ReclaimApp) -> None:
        models = sorted({self.config.settings.model, *self.config.models})
        model = self.config.settings.model
        screen = SubmitScreen(model, models, lambda request: self.submit_jobs(request, screen))

        def finished(text: str | None) -> None:
            if text:
                self.post_message(ActionFinished(text))

        self.push_screen(screen, finished)

    @work(group="ops")
    async def submit_jobs(self: ReclaimApp, request: SubmitRequest, screen: SubmitScreen) -> None:
        assert self.host is not None
        try:
            if request.path:
                text = await asyncio.to_thread(Path(request.path).expanduser().read_text, "utf-8")
                jobs = parse_jobs(
                    text.splitlines(), source=request.path, default_model=self.config.settings.model
                )
            else:
                jobs = [JobSpec(input=request.prompt, model=request.model)]
        except (OSError, UnicodeDecodeError) as exc:
            screen.post_message(SubmitFailed(f"cannot read {request.path}: {exc}"))
            return
        except JobsFileError as exc:
            screen.post_message(SubmitFailed(str(exc)))
            return
        send = not request.path  # one prompt goes out now; a file is left to the loop
        inserted = present = 0
        for start in range(0, len(jobs), SUBMIT_CHUNK):
            chunk = jobs[start : start + SUBMIT_CHUNK]
            try:
                report = await self.host.submit(chunk, send=send)
            except ReclaimError as exc:
                screen.post_message(SubmitFailed(f"submit stopped after {start:,} jobs: {exc}"))
                return
            inserted += report.counts["inserted"]
            present += report.counts["already_present"]
            screen.post_message(SubmitProgressed(start + len(chunk), len(jobs)))
        self.kick_loop()
        tail = f", {present} already in the ledger" if present else ""
        screen.post_message(SubmitFinished(f"submitted: {inserted} reserved{tail}"))

    # -- export -------------------------------------------------------------------------------
    def action_export(self: ReclaimApp) -> None:
        view = self.state.view()
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.config.clock.now()))
        summary = f"Rows of tab '{self.state.tab_spec.label}'"
        summary += f" matching '{self.state.filter_text}'" if self.state.filter_text else ""

        def chosen(request: ExportRequest | None) -> None:
            if request:
                self.export_rows(view, request)

        self.push_screen(ExportScreen(summary, f"reclaim-export-{stamp}.jsonl"), chosen)

    @work(group="ops")
    async def export_rows(self: ReclaimApp, view: View, request: ExportRequest) -> None:
        assert self.reader is not None
        path = Path(request.path).expanduser()
        written = 0
        try:
            out = await asyncio.to_thread(path.open, "w", encoding="utf-8", newline="")
            try:
                async for rows in self.reader.iter_view(view):
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
            self.post_message(ActionFinished(f"export failed: {exc}", "error"))
            return
        self.post_message(ActionFinished(f"exported {written:,} rows to {path}"))

    # -- marks --------------------------------------------------------------------------------
    def action_toggle_mark(self: ReclaimApp) -> None:
        idem = self.table.current_idem()
        if idem is None:
            return
        self.table.set_mark(idem, self.state.toggle_mark(idem))
        self.show_bar()
        self.table.action_cursor_down()

    @work(group="ops")
    async def action_mark_all(self: ReclaimApp) -> None:
        assert self.reader is not None
        idems, capped = await self.reader.matching_idems(self.state.view())
        self.state.marks = set(idems)
        self.rerender()
        note = " (capped: narrow the filter)" if capped else ""
        self.notify(
            f"marked {len(idems):,} row{'s' if len(idems) != 1 else ''}{note}",
            severity="warning" if capped else "information",
        )
