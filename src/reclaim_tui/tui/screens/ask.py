"""One line of text for a row: `a` adopts an interaction id (from a log, a
webhook, the provider's console), `w` answers an interaction that requires
action (what it asks is shown above the input)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

__all__ = ["AskScreen", "adopt_screen", "answer_screen"]


class AskScreen(ModalScreen[str | None]):
    """Dismissed with the stripped text, or None (esc); an empty enter is
    said in the dialog, which stays open."""

    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical {
        width: 76; max-width: 100%; height: auto; max-height: 90%;
        border: round $accent; background: $surface; padding: 1 2;
    }
    AskScreen Static { margin-bottom: 1; }
    AskScreen #ask-error { display: none; margin: 1 0 0 0; color: $text-error; }
    AskScreen #ask-error.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(
        self, title: str, verb: str, explanation: Content | str, placeholder: str, input_id: str
    ) -> None:
        super().__init__()
        self.title_text = title
        self.verb = verb
        self.explanation = explanation
        self.placeholder = placeholder
        self.input_id = input_id

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = self.title_text
            box.border_subtitle = f"enter {self.verb} · esc cancels"
            yield Static(self.explanation)
            yield Input(placeholder=self.placeholder, id=self.input_id)
            yield Static(id="ask-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            # An empty enter closed the dialog silently, as if it had acted.
            error = self.query_one("#ask-error", Static)
            error.update(f"Nothing typed: type the {self.placeholder}, or esc to cancel.")
            error.add_class("-shown")
            return
        self.dismiss(value)


def adopt_screen(idem: str, status: str) -> AskScreen:
    explanation = (
        f"Row {idem} ({status}). The engine fetches the interaction first and"
        " refuses one labelled for another job."
    )
    return AskScreen(
        "adopt an interaction", "adopts", explanation, "interaction id", "interaction-id"
    )


def answer_screen(idem: str, handle: str, asked: str) -> AskScreen:
    explanation = Content.assemble(
        (f"{idem}", "bold"),
        f" — interaction {handle} requires action. It asks:\n\n",
        (asked or "(the interaction says nothing more)", "italic"),
        "\n\nYour answer goes out as a follow-up interaction"
        " (previous_interaction_id); the row then waits for it. To refuse, cancel the row (c).",
    )
    return AskScreen("answer the interaction", "sends", explanation, "your answer", "answer-text")
