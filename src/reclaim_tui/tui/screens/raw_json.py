"""`v`: the stored interaction (results.raw_json), pretty-printed and scrollable."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.tui.bindings import bindings
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.screens.viewer import move_cursor, open_in_viewer

__all__ = ["NO_RESULT", "RawJsonScreen"]

NO_RESULT = "no stored result"


class RawJsonScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    RawJsonScreen { align: center middle; }
    RawJsonScreen > VerticalScroll {
        width: 1fr; height: 1fr; border: round $accent; background: $surface; padding: 0 1;
    }
    /* wrapped, long words folded: nothing is cut at the edge */
    RawJsonScreen #raw-body { width: 1fr; text-wrap: wrap; text-overflow: fold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = bindings(on_app=False, view="raw")

    def __init__(self, idem: str, text: str | None, *, readonly: bool = False) -> None:
        super().__init__()
        self.idem = idem
        self.text = text
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="raw-scroll") as scroll:
            scroll.border_title = f"raw JSON · {self.idem}"
            scroll.border_subtitle = "esc closes · p pager · e editor"
            body = (
                Content(self.text)
                if self.text is not None
                else Content.styled(f"{self.idem}: {NO_RESULT}", "bold $warning")
            )
            yield Static(body, id="raw-body")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_clear(self) -> None:
        self.dismiss()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(readonly=self.readonly, view="raw"))

    def action_cursor_down(self) -> None:
        move_cursor(self.query_one(VerticalScroll), down=True)

    def action_cursor_up(self) -> None:
        move_cursor(self.query_one(VerticalScroll), down=False)

    @work(group="job", exclusive=True)
    async def action_pager(self, variable: str) -> None:
        if self.text is None:
            self.notify(f"{self.idem}: {NO_RESULT}", severity="warning")
            return
        await open_in_viewer(self, variable, self.text, f"{self.idem}.json")
