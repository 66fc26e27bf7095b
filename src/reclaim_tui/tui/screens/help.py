"""`?`: every key, from the same table the bindings are built from; the keys
of the view it was opened from come first, and of those the actions (the
groups of keys that change something: operate, the reclaim loop) first, so
submit, retry, cancel, recover and replay are in view when it opens, even at
80×24. A terminal wide enough shows the actions and the rest
side by side."""

from __future__ import annotations

from itertools import groupby
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.tui.glossary import glossary_text
from reclaim_tui.tui.keymap import KEYS, VIEWS, KeySpec

__all__ = ["HelpScreen"]


Part = Content | str | tuple[str, str]
#: Groups with a key that changes something (operate, the reclaim loop): listed first.
ACTION_GROUPS = tuple(dict.fromkeys(k.group for k in KEYS if k.mutating))
#: From this terminal width the help shows the actions and the rest side by side.
TWO_COLUMNS = 156


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


def help_columns(readonly: bool, view: str = "main") -> tuple[Content, Content]:
    """The help in two parts: this view's actions, then everything else."""
    shown = [k for k in KEYS if not (readonly and k.mutating)]
    width = max(len(k.shown) for k in shown)
    here = [k for k in shown if view in k.views]
    actions = [k for k in here if k.group in ACTION_GROUPS]
    others = [k for k in shown if view not in k.views]
    first: list[Part] = [(f"Keys here: {VIEWS[view]}", "bold $text-primary"), "\n\n"]
    first += _keys(actions, width)
    rest = _keys([k for k in here if k.group not in ACTION_GROUPS], width)
    if others:
        rest += [("Keys of the other views", "bold $text-primary"), "\n\n", *_keys(others, width)]
    if readonly:
        rest.append(("Read-only console: operator actions and the loop are off.\n", "$warning"))
    rest += [glossary_text(), "\n"]
    rest.append(
        (
            "Every action goes through the engine and is written to the row's timeline"
            " with actor 'console'; the reclaim loop's passes with 'console-loop'.",
            "$text-muted",
        )
    )
    return Content.assemble(*first), Content.assemble(*rest)


def help_text(readonly: bool, view: str = "main") -> Content:
    first, rest = help_columns(readonly, view)
    return Content.assemble(first, rest)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 76; max-height: 100%; height: auto;
        border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen > VerticalScroll.-wide { width: 152; }
    HelpScreen Horizontal { height: auto; }
    HelpScreen Horizontal > Static { width: 1fr; }
    HelpScreen Horizontal > #help-actions { margin-right: 2; }
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
            if self.app.size.width < TWO_COLUMNS:
                yield Static(help_text(self.readonly, self.view))
                return
            scroll.add_class("-wide")
            first, rest = help_columns(self.readonly, self.view)
            with Horizontal():
                yield Static(first, id="help-actions")
                yield Static(rest, id="help-rest")
