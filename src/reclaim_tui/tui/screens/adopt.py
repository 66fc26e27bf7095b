"""`a`: attach an interaction id (from a log, a webhook, the provider's console) to a row."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

__all__ = ["AdoptScreen"]


class AdoptScreen(ModalScreen[str | None]):
    DEFAULT_CSS = """
    AdoptScreen { align: center middle; }
    AdoptScreen > Vertical {
        width: 76; height: auto; border: round $accent; background: $surface; padding: 1 2;
    }
    AdoptScreen Static { margin-bottom: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, idem: str, status: str) -> None:
        super().__init__()
        self.idem = idem
        self.status = status

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "adopt an interaction"
            box.border_subtitle = "enter adopts · esc cancels"
            yield Static(
                f"Row {self.idem} ({self.status}). The engine fetches the interaction first and"
                " refuses one labelled for another job."
            )
            yield Input(placeholder="interaction id", id="interaction-id")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(value or None)
