"""Words a newcomer meets in the console, explained where they appear:
a section of the help screen (`?`), and `?` on the detail pane,
which puts the words of the row shown first."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["GLOSSARY", "GlossaryScreen", "glossary_text", "words_in"]

#: (word, what it means), in the order a job meets them.
GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "reserving",
        "the job has a row in the ledger and its create is not known to have reached the API"
        " yet: sent next pass, or being sent now (the row is leased while it is).",
    ),
    (
        "handle",
        "the interaction id the API gave the job (the create's answer); polls and cancels"
        " use it. — means no interaction is known yet.",
    ),
    (
        "lease",
        "a short claim on a row by one process (host:pid) while it sends, polls or delivers"
        " it, so two processes never work on the same row; it ends by itself if that process"
        " dies.",
    ),
    (
        "orphan",
        "a reserving row whose create may have been sent (the connection broke after the"
        " request went out) and whose lease ended: it may be running, and paid for, at the"
        " API. Recovery (o) looks it up by label, or sends it again.",
    ),
    (
        "held",
        "kept for an operator instead of acted on: an orphan held by the orphan policy, or a"
        " row whose interaction answers 404. Nothing happens to it until you act (o, a, c).",
    ),
    (
        "next poll",
        "when the loop will ask the API about the job again (due: at the next pass);"
        " n makes a submitted row due now.",
    ),
    (
        "attempts",
        "creates sent for the job; past the limit it fails. Retry (r) starts again at 0.",
    ),
    (
        "age in state",
        "how long the row has been in its current status (state_since), not since it was created.",
    ),
    (
        "done (unconsumed)",
        "the API finished and the result is stored in the ledger, but the sink (your folder,"
        " your callback) has not taken it yet; R replays it from the ledger, without the API.",
    ),
    ("consumed", "the result was stored and delivered to the sink: the job is finished."),
    (
        "cancel pending",
        "cancelled in the ledger, but the API has not confirmed the cancel (it failed or was"
        " unreachable): it may still run and bill; the loop asks the API again until it does.",
    ),
    (
        "plan ready",
        "a research agent answered with a plan and waits for your answer (w) before it runs;"
        " the plan is in the detail.",
    ),
    (
        "asking",
        "the interaction requires action (requires_action): it waits for an answer (w).",
    ),
)


def words_in(text: str) -> list[str]:
    """The glossary's words that `text` holds (case-insensitive), in glossary order."""
    lowered = text.lower()
    found = []
    for word, _ in GLOSSARY:
        key = word.split(" (")[0]
        if key in lowered:
            found.append(word)
    return found


def glossary_text(first: list[str] | None = None) -> Content:
    """The glossary; `first`: words put first, under "In this row"."""
    first = first or []
    parts: list[Content | str | tuple[str, str]] = []

    def entries(words: list[str]) -> None:
        meanings = dict(GLOSSARY)
        for word in words:
            parts.extend([(f"  {word}", "bold $primary"), " — ", meanings[word], "\n"])

    if first:
        parts += [("In this row", "bold $accent"), "\n"]
        entries(first)
        parts.append("\n")
    rest = [w for w, _ in GLOSSARY if w not in first]
    parts += [("Words" if not first else "Other words", "bold $accent"), "\n"]
    entries(rest)
    return Content.assemble(*parts)


class GlossaryScreen(ModalScreen[None]):
    """`?` on the detail pane: the words of the row shown first, then the rest."""

    DEFAULT_CSS = """
    GlossaryScreen { align: center middle; }
    GlossaryScreen > VerticalScroll {
        width: 76; max-height: 100%; height: auto;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.first = words_in(text)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "what the words mean"
            scroll.border_subtitle = "esc closes"
            yield Static(glossary_text(self.first), id="glossary")
