"""The `:` command line (k9s's): `:failed` shows a tab, `:model pro` filters
by model, `:filter TEXT`, `:costs`, `:charts`, `:prune 30d [failed cancelled]`,
`:columns key status error` (`:columns all`), `:help`, `:q`. Parsing is here (`parse_command`);
the main screen carries a command out. An unknown command is said in the
line itself, and nothing else changes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input, Static

from reclaim_tui.config import COLUMN_NAMES
from reclaim_tui.core.ledger.console.views import SORT_COLUMNS
from reclaim_tui.core.ledger.prune import parse_age, prunable_statuses
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError
from reclaim_tui.tui.tabs import TABS
from reclaim_tui.tui.widgets.filter_bar import LINE_MAX

__all__ = [
    "COMMANDS",
    "Command",
    "CommandLine",
    "column_names",
    "pace_argument",
    "parse_command",
    "prune_arguments",
    "saved_view",
    "sort_arguments",
]

Verb = Literal[
    "tab",
    "model",
    "filter",
    "help",
    "quit",
    "costs",
    "charts",
    "prune",
    "columns",
    "sort",
    "view",
    "fleet",
    "interval",
    "concurrency",
    "ledger",
]
#: Words that name a tab besides its id (its short label, the singular).
_ALIASES = {t.short: t.id for t in TABS} | {"orphan": "orphans", "unconsumed": "done"}
_WORDS: dict[str, Verb] = {
    "model": "model",
    "filter": "filter",
    "help": "help",
    "h": "help",
    "q": "quit",
    "quit": "quit",
    "costs": "costs",
    "cost": "costs",
    "charts": "charts",
    "chart": "charts",
    "prune": "prune",
    "columns": "columns",
    "cols": "columns",
    "sort": "sort",
    "view": "view",
    "fleet": "fleet",
    "interval": "interval",
    "concurrency": "concurrency",
    "ledger": "ledger",
}
#: `:sort` words → table columns (the columns' own keys work too).
SORT_NAMES = {
    "key": "idem",
    "status": "status",
    "model": "model",
    "handle": "handle",
    "attempts": "attempts",
    "att": "attempts",
    "age": "age",
    "next": "next",
    "updated": "updated",
    "error": "error",
}
#: What Tab completes (and the help line lists).
COMMANDS = (
    *(t.id for t in TABS),
    "model ",
    "filter ",
    "costs",
    "charts",
    "prune ",
    "columns ",
    "sort ",
    "view ",
    "fleet",
    "interval ",
    "concurrency ",
    "ledger ",
    "help",
    "quit",
)


@dataclass(frozen=True)
class Command:
    verb: Verb
    argument: str = ""


def parse_command(line: str) -> Command:
    """The command a line names; ValueError says what is wrong with it."""
    word, _, rest = line.strip().removeprefix(":").strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    tab = word if word in {t.id for t in TABS} else _ALIASES.get(word)
    if tab is not None and not rest:
        return Command("tab", tab)
    verb = _WORDS.get(word)
    if verb is None or (verb in ("help", "quit", "costs", "charts", "fleet") and rest):
        shown = line.strip().removeprefix(":").strip() or ":"
        raise ValueError(
            f"unknown command {shown!r} — try :failed, :model pro, :filter TEXT, :costs,"
            " :charts, :prune 30d, :help, :q"
        )
    if verb == "prune":
        _prune_arguments(rest)
    if verb == "columns":
        column_names(Command(verb, rest))
    if verb == "sort":
        sort_arguments(rest)
    if verb in ("interval", "concurrency"):
        pace_argument(Command(verb, rest))
    return Command(verb, rest)


def pace_argument(command: Command) -> float:
    """The number of `:interval SECONDS` or `:concurrency N` (its range is
    the service's to check, or the app's for its own loop)."""
    what = "SECONDS (the longest wait between passes)" if command.verb == "interval" else "N"
    try:
        value = float(command.argument)
    except ValueError:
        raise ValueError(f":{command.verb} {what}: {command.argument!r} is not a number") from None
    if command.verb == "concurrency" and not value.is_integer():
        raise ValueError(f":concurrency N: {command.argument!r} is not a whole number")
    return value


def saved_view(views: dict[str, str], name: str, where: Path | None = None) -> str:
    """The filter text of the view `name` (the settings file's `[views]`, at
    `where`); ValueError lists the views there are, or says how to add one."""
    if name in views:
        return views[name]
    file = str(where) if where is not None else "the console's settings.toml"
    names = ", ".join(sorted(views)) or (
        f'none yet: add a [views] table to {file}, a line a view: failing = "status:failed"'
    )
    said = f"no view named {name!r}; " if name else ":view NAME — "
    raise ValueError(f"{said}views: {names}")


def sort_arguments(rest: str) -> tuple[str, bool | None]:
    """`COLUMN [asc|desc]` of `:sort`: the table column and the direction
    (None: ascending, or the other way when it is the sort already)."""
    words = rest.lower().split()
    if not 1 <= len(words) <= 2 or (words[1:] and words[1] not in ("asc", "desc")):
        raise ValueError(f":sort COLUMN [asc|desc], COLUMN one of {' '.join(SORT_NAMES)}")
    name = SORT_NAMES.get(words[0], words[0])
    if name not in SORT_COLUMNS:
        raise ValueError(f":sort: {words[0]!r} is not a column ({' '.join(SORT_NAMES)})")
    return name, (words[1] == "desc") if words[1:] else None


def column_names(command: Command) -> tuple[str, ...] | None:
    """The columns `:columns NAME …` names (None: `:columns all`, every one that fits)."""
    names = tuple(dict.fromkeys(command.argument.lower().split()))
    if names == ("all",):
        return None
    unknown = [n for n in names if n not in COLUMN_NAMES]
    if not names or unknown:
        said = f"{', '.join(unknown)} is not a column; " if unknown else ""
        raise ValueError(f":columns: {said}name some of {' '.join(COLUMN_NAMES)}, or all")
    return names


def _prune_arguments(rest: str) -> tuple[float, tuple[str, ...]]:
    """`AGE [STATUS …]` of `:prune`: the age in seconds and the statuses
    (consumed when none is named); ValueError says what is wrong."""
    words = rest.split()
    if not words:
        raise ValueError(":prune needs an age: :prune 30d (consumed rows), :prune 7d failed")
    age = parse_age(words[0])
    statuses = tuple(dict.fromkeys(w.lower() for w in words[1:])) or ("consumed",)
    unknown = [s for s in statuses if s not in {status.value for status in Status}]
    if unknown:
        raise ValueError(
            f":prune: {', '.join(unknown)} is not a status (consumed, failed, cancelled)"
        )
    try:
        prunable_statuses(statuses)
    except ConfigError as exc:  # it names what may be pruned, and why not the others
        raise ValueError(str(exc)) from exc
    return age, statuses


def prune_arguments(command: Command) -> tuple[float, tuple[str, ...]]:
    """The age (seconds) and statuses of a parsed `:prune` command."""
    return _prune_arguments(command.argument)


class CommandLine(Vertical):
    """Hidden until `open`; posts `Entered` with a parsed command, or says
    in its own line why the text is not one."""

    DEFAULT_CSS = """
    CommandLine { display: none; height: auto; border: tall $accent; }
    CommandLine.-open { display: block; }
    CommandLine > Input, CommandLine > Input:focus { border: none; height: 1; padding: 0 1; }
    CommandLine > #command-message { height: auto; padding: 0 1; color: $text-muted; }
    CommandLine.-error > #command-message { color: $text-error; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "complete", "Complete", show=False),
    ]

    @dataclass
    class Entered(Message):
        command: Command

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder=":failed · :consumed · :orphans · :model pro · :filter TEXT · :help · :q",
            suggester=SuggestFromList(COMMANDS, case_sensitive=False),
            id="command-input",
            max_length=LINE_MAX,
        )
        yield Static("enter runs · tab completes · esc closes", id="command-message")

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    def open(self) -> None:
        self.add_class("-open")
        self.say("enter runs · tab completes · esc closes", error=False)
        self.input.value = ""
        self.input.focus()

    def close(self) -> None:
        self.remove_class("-open")

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def say(self, text: str, *, error: bool = True) -> None:
        self.set_class(error, "-error")
        # Plain text: a message naming `[views]` is not markup.
        self.query_one("#command-message", Static).update(Content(text))

    async def action_complete(self) -> None:
        """The input's suggestion for what is typed (as it shows it, greyed) replaces it."""
        line, value = self.input, self.input.value
        suggester = line.suggester
        if suggester is None:
            return
        suggestion = await suggester.get_suggestion(
            value if suggester.case_sensitive else value.casefold()
        )
        if suggestion and len(suggestion) > len(value) and line.value == value:
            line.value = suggestion
            line.cursor_position = len(suggestion)

    @on(Input.Submitted, "#command-input")
    def _entered(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            command = parse_command(event.value)
        except ValueError as exc:
            self.say(str(exc))
            return
        self.post_message(self.Entered(command))
