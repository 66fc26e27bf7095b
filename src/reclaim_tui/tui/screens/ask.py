"""One line of text for a row: `a` adopts an interaction id (from a log, a
webhook, the provider's console), `w` answers an interaction that requires
action (what it asks is shown above the input, scrollable) or approves a
research plan (`ctrl+r`: refine it, ask for a new plan instead)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

__all__ = ["APPROVAL", "AskScreen", "PlanScreen", "adopt_screen", "answer_screen"]

#: What approving a plan with nothing typed sends as the next turn.
APPROVAL = "The plan is approved: go ahead with the research."


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
    AskScreen #ask-explained { height: auto; max-height: 20; }
    AskScreen #ask-error { display: none; margin: 1 0 0 0; color: $text-error; }
    AskScreen #ask-error.-shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]
    # The text field, not the scrollable explanation above it (tab reaches that).
    AUTO_FOCUS = "Input"

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
            box.border_subtitle = self.subtitle()
            # Scrollable: a research plan runs to pages, and was cut with "…".
            with VerticalScroll(id="ask-explained"):
                yield Static(self.explanation)
            yield Input(placeholder=self.placeholder, id=self.input_id)
            yield Static(id="ask-error")

    def subtitle(self) -> str:
        return f"enter {self.verb} · esc cancels"

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._send(self.entered(event.value))

    def entered(self, text: str) -> str:
        """What enter sends of the text typed."""
        return text

    def _send(self, text: str) -> None:
        value = text.strip()
        if not value:
            # An empty enter closed the dialog silently, as if it had acted.
            error = self.query_one("#ask-error", Static)
            what = (
                self.placeholder
                if self.placeholder.startswith("your")
                else f"the {self.placeholder}"
            )
            error.update(f"Nothing typed: type {what}, or esc to cancel.")
            error.add_class("-shown")
            return
        self.dismiss(value)


class PlanScreen(AskScreen):
    """The answer to a research plan: enter approves it with the text typed;
    ctrl+r sends the text as a refinement (the agent plans again).
    `refine` says which, once dismissed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("ctrl+r", "refine", "Refine the plan"),
    ]

    def __init__(
        self,
        *args: str | Content,
        whole: Callable[[], Awaitable[str | None]] | None = None,
        explain: Callable[[str], Content] | None = None,
    ) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.refine = False
        #: Reads the plan whole from its stored interaction: the row's own
        #: note keeps its first 2,000 characters (core/engine/polling.py).
        self._whole, self._explain = whole, explain

    def on_mount(self) -> None:
        if self._whole is not None:
            self.run_worker(self._show_whole(), group="plan", exclusive=True)

    async def _show_whole(self) -> None:
        assert self._whole is not None and self._explain is not None
        text = await self._whole()
        if text and self.is_attached:
            self.explanation = self._explain(text)
            self.query_one("#ask-explained Static", Static).update(self.explanation)

    def subtitle(self) -> str:
        return "enter approves · ctrl+r asks for a new plan · esc cancels"

    def entered(self, text: str) -> str:
        # Enter approves, as the dialog says, with or without a word to go with it.
        return text if text.strip() else APPROVAL

    def action_refine(self) -> None:
        text = self.query_one(Input).value
        self.refine = bool(text.strip())  # nothing typed: still open, nothing chosen
        self._send(text)


def adopt_screen(idem: str, status: str) -> AskScreen:
    explanation = (
        f"Row {idem} ({status}). The engine fetches the interaction first and"
        " refuses one labelled for another job."
    )
    return AskScreen(
        "adopt an interaction", "adopts", explanation, "interaction id", "interaction-id"
    )


def answer_screen(
    idem: str,
    handle: str,
    asked: str,
    *,
    plan: bool = False,
    whole_plan: Callable[[], Awaitable[str | None]] | None = None,
) -> AskScreen:
    """`whole_plan` reads the plan whole (the row's note holds its start)."""
    if plan:

        def explained(text: str) -> Content:
            return Content.assemble(
                (f"{idem}", "bold"),
                f" — interaction {handle} completed with a research plan:\n\n",
                (text or "(the plan is empty)", "italic"),
                "\n\nEnter approves it (your text, or with none typed"
                f" {APPROVAL!r}, goes with the next turn, chained by"
                " previous_interaction_id, and the research runs); ctrl+r sends your text"
                " as a refinement and the agent plans again. To drop it, cancel the row (c).",
            )

        return PlanScreen(
            "approve or refine the plan",
            "approves",
            explained(asked),
            "your answer",
            "answer-text",
            whole=whole_plan,
            explain=explained,
        )
    explanation = Content.assemble(
        (f"{idem}", "bold"),
        f" — interaction {handle} requires action. It asks:\n\n",
        (asked or "(the interaction says nothing more)", "italic"),
        "\n\nYour answer goes out as a follow-up interaction"
        " (previous_interaction_id); the row then waits for it. To refuse, cancel the row (c).",
    )
    return AskScreen("answer the interaction", "sends", explanation, "your answer", "answer-text")
