"""`?`: every key, from the same table the bindings are built from."""

from __future__ import annotations

from itertools import groupby
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.tui.keymap import KEYS

__all__ = ["HelpScreen"]


def help_text(readonly: bool) -> Content:
    parts: list[Content | str | tuple[str, str]] = []
    shown = [k for k in KEYS if not (readonly and k.mutating)]
    width = max(len(k.shown) for k in shown)
    order = list(dict.fromkeys(k.group for k in shown))
    shown.sort(key=lambda k: order.index(k.group))  # stable: table order within a group
    for group, keys in groupby(shown, key=lambda k: k.group):
        parts += [(group, "bold $accent"), "\n"]
        for spec in keys:
            parts += [(f"  {spec.shown:>{width}}  ", "bold $primary"), spec.help, "\n"]
        parts.append("\n")
    if readonly:
        parts.append(("Read-only console: operator actions and the loop are off.\n", "$warning"))
    parts.append(
        (
            "Every action goes through the engine and is written to the row's timeline"
            " with actor 'console'; the reclaim loop's passes with 'console-loop'.",
            "$text-muted",
        )
    )
    return Content.assemble(*parts)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-height: 100%; height: auto;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def __init__(self, readonly: bool) -> None:
        super().__init__()
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "keys"
            scroll.border_subtitle = "esc closes"
            yield Static(help_text(self.readonly))
