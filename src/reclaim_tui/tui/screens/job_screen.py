"""The keys every view of one job shares (keymap.py's views "main" and
"follow"): the raw JSON (v), the result in $PAGER / $EDITOR (p, e), the key
or the interaction id to the clipboard (y, Y), and j / k.

The reads run in workers; the pager runs with the terminal handed over to it
(`App.suspend`), on a temporary file removed afterwards."""

from __future__ import annotations

from textual import work
from textual.screen import Screen

from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.models import Row, StoredResult
from reclaim_tui.errors import LedgerError
from reclaim_tui.tui import external_viewer
from reclaim_tui.tui.screens.raw_json import RawJsonScreen
from reclaim_tui.tui.screens.viewer import move_cursor, open_in_viewer

__all__ = ["JobScreen"]


class JobScreen(Screen[None]):
    """A screen that shows one job at a time: `job_row` says which, as far
    as the screen knows it; `job_reader` reads it again."""

    readonly = False

    def job_row(self) -> Row | None:
        raise NotImplementedError

    def job_reader(self) -> ConsoleReader | None:
        raise NotImplementedError

    def action_cursor_down(self) -> None:
        move_cursor(self.focused, down=True)

    def action_cursor_up(self) -> None:
        move_cursor(self.focused, down=False)

    def action_copy(self, what: str) -> None:
        row = self.job_row()
        if row is None:
            self.notify("no row to copy from", severity="warning")
            return
        if what == "key":
            text, label = row.idem, "key"
        elif row.handle:
            text, label = row.handle, "interaction id"
        else:
            self.notify(f"{row.idem} has no interaction id yet", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"copied the {label} {text} (OSC 52: if your terminal allows it)")

    async def _stored(self) -> tuple[str, StoredResult | None] | None:
        """The job's key and its stored result, read now (None: no job, or the read failed)."""
        row, reader = self.job_row(), self.job_reader()
        if row is None or reader is None:
            self.notify("no row highlighted", severity="warning")
            return None
        try:
            detail = await reader.detail(row.idem)
        except LedgerError as exc:
            self.notify(f"ledger read failed: {exc}", severity="error")
            return None
        return row.idem, detail.result if detail is not None else None

    @work(group="job", exclusive=True)
    async def action_raw_json(self) -> None:
        stored = await self._stored()
        if stored is not None:
            idem, result = stored
            text = external_viewer.pretty_json(result.raw_json) if result is not None else None
            self.app.push_screen(RawJsonScreen(idem, text, readonly=self.readonly))

    @work(group="job", exclusive=True)
    async def action_pager(self, variable: str) -> None:
        stored = await self._stored()
        if stored is None:
            return
        idem, result = stored
        if result is None:
            self.notify(f"{idem}: no stored result", severity="warning")
            return
        if result.output_text:
            await open_in_viewer(self, variable, result.output_text, f"{idem}.md")
        else:  # a failed job's paid partial output: the interaction is all there is
            await open_in_viewer(
                self, variable, external_viewer.pretty_json(result.raw_json), f"{idem}.json"
            )
