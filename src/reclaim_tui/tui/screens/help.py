"""`?`: every key, from the same table the bindings are built from; the keys
of the view it was opened from come first."""

from __future__ import annotations

from itertools import groupby
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.tui.glossary import glossary_text
from reclaim_tui.tui.keymap import KEYS, VIEWS, KeySpec

__all__ = ["HelpScreen"]


Part = Content | str | tuple[str, str]


def _keys(specs: list[KeySpec], width: int) -> list[Part]:
    parts: list[Part] = []
    order = list(dict.fromkeys(k.group for k in specs))
    specs = sorted(specs, key=lambda k: order.index(k.group))  # stable: table order in a group
    for group, keys in groupby(specs, key=lambda k: k.group):
        parts += [(group, "bold $accent"), "\n"]
        for spec in keys:
            parts += [(f"  {spec.shown:>{width}}  ", "bold $primary"), spec.help, "\n"]
        parts.append("\n")
    return parts


def help_text(readonly: bool, view: str = "main") -> Content:
    shown = [k for k in KEYS if not (readonly and k.mutating)]
    width = max(len(k.shown) for k in shown)
    here = [k for k in shown if view in k.views]
    others = [k for k in shown if view not in k.views]
    parts: list[Part] = [(f"Keys here: {VIEWS[view]}", "bold $text-primary"), "\n\n"]
    parts += _keys(here, width)
    if others:
        parts += [("Keys of the other views", "bold $text-primary"), "\n\n", *_keys(others, width)]
    if readonly:
        parts.append(("Read-only console: operator actions and the loop are off.\n", "$warning"))
    parts += [glossary_text(), "\n"]
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
        # As in the table: G / end the last line, g / home the first.
        Binding("G,end", "to_end(True)", "Last", show=False),
        Binding("g,home", "to_end(False)", "First", show=False),
        Binding("j", "scroll_by(1)", "Down", show=False),
        Binding("k", "scroll_by(-1)", "Up", show=False),
    ]

    def __init__(self, readonly: bool, view: str = "main") -> None:
        super().__init__()
        self.readonly = readonly
        self.view = view

    def action_to_end(self, last: bool) -> None:
        scroll = self.query_one(VerticalScroll)
        if last:
            scroll.scroll_end(animate=False)
        else:
            scroll.scroll_home(animate=False)

    def action_scroll_by(self, lines: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=lines, animate=False)

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = f"keys · {VIEWS[self.view]}"
            scroll.border_subtitle = "esc closes"
            yield Static(help_text(self.readonly, self.view))
