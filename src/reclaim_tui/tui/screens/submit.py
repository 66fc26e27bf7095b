"""`s`: submit one prompt, or a JSON Lines file with a progress bar.

The screen does no I/O: it hands the request to `submit`, whose worker (the
main screen's) validates the file (core/jobsfile), reserves the jobs through
the engine and answers with `SubmitProgressed` / `SubmitFinished` /
`SubmitFailed`. (A callback, not a message: a modal screen's messages bubble
to the app, not to the screen that opened it.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.suggester import SuggestFromList
from textual.widgets import (
    Button,
    Input,
    Label,
    ProgressBar,
    Static,
    TabbedContent,
    TabPane,
    Tabs,
    TextArea,
)

from reclaim_tui.tui.messages import SubmitFailed, SubmitFinished, SubmitProgressed

__all__ = ["SubmitRequest", "SubmitScreen"]


class _ModeTabs(TabbedContent):
    """Tabs that come to a pane for a focus only while that focus is inside it.

    Textual brings a pane to the front when a widget in it is focused; the
    news travels as a `TabPane.Focused` message. On a loaded machine the one
    for the prompt focused at mount arrived after the operator had chosen the
    JSONL tab (CI), and the prompt's pane came back: stale news is dropped.
    """

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.screen.focused
        if focused is None or event.tab_pane not in focused.ancestors:
            event.prevent_default()  # TabbedContent's own handler would switch
            event.stop()


@dataclass(frozen=True)
class SubmitRequest:
    prompt: str = ""
    model: str = ""
    path: str = ""  # a JSONL file instead of a prompt


class SubmitScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    SubmitScreen { align: center middle; }
    SubmitScreen > Vertical {
        width: 84; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    SubmitScreen TextArea { height: 6; }
    SubmitScreen Label { margin-top: 1; color: $text-muted; }
    SubmitScreen ProgressBar { margin-top: 1; display: none; }
    SubmitScreen ProgressBar.-busy { display: block; }
    SubmitScreen #submit-error { color: $error; height: auto; }
    SubmitScreen Horizontal { height: auto; align: right middle; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("ctrl+s", "go", "Submit"),
    ]

    def __init__(
        self, default_model: str, models: list[str], submit: Callable[[SubmitRequest], object]
    ) -> None:
        super().__init__()
        self.default_model = default_model
        self.models = models
        self.submit = submit
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "submit"
            box.border_subtitle = "ctrl+s submits · esc cancels"
            with _ModeTabs(id="submit-mode"):
                with TabPane("Prompt", id="prompt-pane"):
                    yield Label("prompt")
                    yield TextArea(id="prompt")
                    yield Label("model")
                    yield Input(
                        self.default_model,
                        id="model",
                        suggester=SuggestFromList(self.models, case_sensitive=False),
                    )
                with TabPane("JSONL file", id="file-pane"):
                    yield Label("jobs file (one JSON object per line: input, model, key, config)")
                    yield Input(placeholder="path/to/jobs.jsonl", id="path")
                    yield ProgressBar(id="progress", show_eta=False)
            yield Static("", id="submit-error")
            with Horizontal():
                yield Button("Submit", id="go", variant="primary")

    def on_mount(self) -> None:
        # The field of the pane that is active by now (a pane chosen before
        # this runs keeps its field: focusing the prompt would pull its pane back).
        active = self.query_one(TabbedContent).active
        self.query_one("#path" if active == "file-pane" else "#prompt").focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # A focused widget in the pane just hidden would pull its pane back:
        # focus follows the tab then. On the tabs themselves it stays, so
        # that Tab goes on to the pane's first field.
        # A stale activation (the first pane's, posted at mount, arriving after
        # another pane was chosen) must not move focus back: focus would pull
        # the old pane in again.
        if event.pane.id != self.query_one(TabbedContent).active:
            return
        focused = self.focused
        tabs = self.query_one(TabbedContent)
        on_tabs = isinstance(focused, Tabs) and tabs in focused.ancestors
        if on_tabs or (focused and event.pane in focused.ancestors):
            return
        self.query_one("#path" if event.pane.id == "file-pane" else "#prompt").focus()

    def _request(self) -> SubmitRequest | str:
        """The request, or what is missing."""
        mode = self.query_one(TabbedContent).active
        if mode == "file-pane":
            path = self.query_one("#path", Input).value.strip()
            return SubmitRequest(path=path) if path else "Type the path of a JSONL file."
        prompt = self.query_one("#prompt", TextArea).text.strip()
        model = self.query_one("#model", Input).value.strip() or self.default_model
        return SubmitRequest(prompt=prompt, model=model) if prompt else "Type a prompt."

    def action_go(self) -> None:
        if self.busy:
            return
        request = self._request()
        if isinstance(request, str):
            self.query_one("#submit-error", Static).update(request)
            return
        self.busy = True
        self.query_one("#submit-error", Static).update("")
        # The bar shows only while a file is read and reserved.
        self.query_one(ProgressBar).set_class(bool(request.path), "-busy")
        self.submit(request)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_go()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_go()

    def on_submit_progressed(self, event: SubmitProgressed) -> None:
        self.query_one(ProgressBar).update(total=event.total, progress=event.done)

    def on_submit_failed(self, event: SubmitFailed) -> None:
        self.busy = False
        self.query_one(ProgressBar).remove_class("-busy")
        self.query_one("#submit-error", Static).update(event.error)

    def on_submit_finished(self, event: SubmitFinished) -> None:
        self.dismiss(event.text)
