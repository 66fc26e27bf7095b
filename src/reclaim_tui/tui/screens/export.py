"""`ctrl+e`: where to write the filtered rows, and as what."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

__all__ = ["ExportRequest", "ExportScreen"]


@dataclass(frozen=True)
class ExportRequest:
    path: str
    fmt: str  # "jsonl" or "csv"


class ExportScreen(ModalScreen[ExportRequest | None]):
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical {
        width: 76; height: auto; border: round $accent; background: $surface; padding: 1 2;
    }
    ExportScreen RadioSet { layout: horizontal; margin: 1 0; }
    ExportScreen Horizontal { height: auto; align: right middle; }
    ExportScreen #export-error { color: $text-error; margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(
        self, summary: str, default_path: str, error: str = "", fmt: str = "jsonl"
    ) -> None:
        super().__init__()
        self.summary = summary
        self.default_path = default_path
        #: Why the last try failed (the dialog opens again with its path).
        self.error = error
        self.fmt = fmt

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "export"
            yield Static(self.summary)
            with RadioSet(id="format"):
                yield RadioButton("JSON Lines", value=self.fmt != "csv", id="jsonl")
                yield RadioButton("CSV", value=self.fmt == "csv", id="csv")
            yield Input(self.default_path, placeholder="output file", id="export-path")
            if self.error:
                yield Static(self.error, id="export-error")
            with Horizontal():
                yield Button("Export", id="go", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    def _request(self) -> ExportRequest | None:
        path = self.query_one("#export-path", Input).value.strip()
        pressed = self.query_one(RadioSet).pressed_button
        fmt = pressed.id if pressed is not None and pressed.id else "jsonl"
        return ExportRequest(path, fmt) if path else None

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        field = self.query_one("#export-path", Input)
        stem, _, _ = field.value.rpartition(".")
        if stem:
            field.value = f"{stem}.{event.pressed.id}"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(self._request())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self._request())
