"""Every key of the console, in one table: the bindings (the app's, the main
screen's, the follow and raw views'), the help screen and the command palette
are all built from it, so none can drift.

A key belongs to one or more views (`views`): "main" (the ledger table),
"follow" (one job followed live, screens/follow.py) and "raw" (the stored
interaction's JSON, screens/raw_json.py). The help screen lists the keys of
the view it was opened from first.

`KEYS` is one table on purpose (the limit of ~400 lines a module does
not split it): it is the one place a key is declared, read in its order by
the footer, the help screen and the palette. The tabs it binds are tabs.py's;
the Textual bindings built from it, bindings.py's."""

from __future__ import annotations

from dataclasses import dataclass

from reclaim_tui.tui.tabs import TABS

__all__ = [
    "APP_ACTIONS",
    "KEYS",
    "MUTATING",
    "SORT_KEYS",
    "TITLED",
    "VIEWS",
    "KeySpec",
]


@dataclass(frozen=True, slots=True)
class KeySpec:
    key: str  # Textual key name(s), comma separated
    shown: str  # how the help screen prints the key
    action: str
    title: str  # footer / palette title
    help: str  # one line for the help screen and the palette
    group: str
    mutating: bool = False
    footer: bool = True
    #: A footer too narrow for every title keeps this one's (the others show their key only).
    titled: bool = False
    #: The views the key works in (module docstring).
    views: tuple[str, ...] = ("main",)
    #: The other views whose footer shows it (the main view's: `footer`).
    footer_in: tuple[str, ...] = ()


#: k9s's shift+letter sorts: the letter, the table column (ledger/views.py), its name.
SORT_KEYS = (
    ("K", "idem", "key"),
    ("T", "status", "status"),
    ("M", "model", "model"),
    ("H", "handle", "handle"),
    ("N", "attempts", "attempts"),
    ("W", "age", "age in state"),
    ("X", "next", "next poll"),
    ("U", "updated", "updated"),
    ("E", "error", "last error"),
)


def _sort_word(column: str) -> str:
    """What `:sort` calls the column (widgets/command_line.py's SORT_NAMES)."""
    return "key" if column == "idem" else column


_NAV = "Navigate"
_VIEW = "View"
_OPS = "Operate (through the engine, actor 'console')"
_LOOP = "Reclaim loop"
_JOB = "One job (follow, raw JSON, pager, clipboard)"
_PANELS = "Panels"
#: The views and what the help screen calls them.
VIEWS = {"main": "the ledger table", "follow": "following one job", "raw": "the raw JSON"}
_ALL = tuple(VIEWS)
_ONE_JOB = ("main", "follow")

KEYS: tuple[KeySpec, ...] = (
    KeySpec(
        "question_mark",
        "?",
        "help",
        "Help",
        "Show every key (this view's first)",
        _NAV,
        titled=True,
        views=_ALL,
        footer_in=("follow",),
    ),
    KeySpec(
        "j",
        "j / down",
        "cursor_down",
        "Down",
        "Down a row (a line)",
        _NAV,
        False,
        False,
        views=_ALL,
    ),
    KeySpec("k", "k / up", "cursor_up", "Up", "Up a row (a line)", _NAV, False, False, views=_ALL),
    KeySpec(
        "colon",
        ":",
        "command_line",
        "Command",
        "Command line: :failed :model pro :filter TEXT :view NAME :sort COLUMN [asc|desc]"
        " :fleet :costs :charts :prune 30d :help :q",
        _NAV,
    ),
    KeySpec(
        "slash",
        "/",
        "filter",
        "Filter",
        "Filter: text, status:NAME, model:TEXT, label:K=V, age>1h, updated<10m, attempts>2,"
        " cost>0.5",
        _VIEW,
        titled=True,
    ),
    *(
        KeySpec(
            str(n),
            str(n),
            f"show_tab('{tab.id}')",
            f"Tab {tab.label}",
            f"Show the {tab.label} tab",
            _VIEW,
            footer=False,
        )
        for n, tab in enumerate(TABS, start=1)
    ),
    KeySpec("t", "t", "cycle_sort", "Sort", "Cycle sort: age in state / updated", _VIEW),
    *(
        KeySpec(
            letter,
            letter,
            f"sort_by('{column}')",
            f"Sort by {name}",
            f"Sort by {name} (again: the other way; :sort {_sort_word(column)} desc)",
            _VIEW,
            footer=False,
        )
        for letter, column, name in SORT_KEYS
    ),
    KeySpec(
        "dollar_sign",
        "$",
        "costs",
        "Costs",
        "Costs: tokens and USD by status / model / day (the tab's rows)",
        _VIEW,
    ),
    KeySpec(
        "S",
        "S",
        "charts",
        "Charts",
        "Charts: completions, failures, API errors; run times; models",
        _VIEW,
    ),
    KeySpec(
        "enter",
        "enter",
        "toggle_detail",
        "Detail",
        "Open / close the row's detail",
        _NAV,
    ),
    KeySpec(
        "pagedown,pageup",
        "pgdn / pgup",
        "noop",
        "Page",
        "Page down / up, through the whole view",
        _NAV,
        footer=False,
    ),
    KeySpec("g", "g / home", "first_page", "First", "First row of the view", _NAV, footer=False),
    KeySpec("G", "G / end", "last_page", "Last", "Last row of the view", _NAV, footer=False),
    # f v $ S : enter: in the footer where they fit (widgets/footer.py drops them first).
    KeySpec("f", "f", "follow", "Follow", "Follow the row live (its timeline)", _JOB),
    KeySpec(
        "v",
        "v",
        "raw_json",
        "Raw",
        "The stored interaction as JSON",
        _JOB,
        views=_ONE_JOB,
        footer_in=("follow",),
    ),
    KeySpec(
        "p",
        "p",
        "pager('PAGER')",
        "Pager",
        "Open the result (raw view: the JSON) in $PAGER",
        _JOB,
        footer=False,
        views=_ALL,
        footer_in=("follow", "raw"),
    ),
    KeySpec(
        "e",
        "e",
        "pager('EDITOR')",
        "Editor",
        "Open the result (raw view: the JSON) in $EDITOR",
        _JOB,
        footer=False,
        views=_ALL,
        footer_in=("raw",),
    ),
    KeySpec(
        "y",
        "y",
        "copy('key')",
        "Copy key",
        "Copy the key (OSC 52)",
        _JOB,
        footer=False,
        views=_ONE_JOB,
        footer_in=("follow",),
    ),
    KeySpec(
        "Y",
        "Y",
        "copy('interaction')",
        "Copy id",
        "Copy the interaction id (OSC 52)",
        _JOB,
        footer=False,
        views=_ONE_JOB,
        footer_in=("follow",),
    ),
    KeySpec(
        "D",
        "D",
        "toggle_panel('detail')",
        "Detail",
        "Hide / show the detail pane",
        _PANELS,
        footer=False,
    ),
    KeySpec(
        "L", "L", "toggle_panel('log')", "Log", "Hide / show the loop log", _PANELS, footer=False
    ),
    KeySpec(
        "greater_than_sign",
        ">",
        "detail_width(1)",
        "Wider",
        "Widen the detail pane",
        _PANELS,
        footer=False,
    ),
    KeySpec(
        "less_than_sign",
        "<",
        "detail_width(-1)",
        "Narrower",
        "Narrow the detail pane",
        _PANELS,
        footer=False,
    ),
    KeySpec(
        "space",
        "space",
        "toggle_mark",
        "Mark",
        "Mark / unmark the row and go down one",
        _OPS,
    ),
    KeySpec("A", "A", "mark_all", "Mark all", "Mark every row matching tab + filter", _OPS),
    # One key, one line: in the follow and raw views `clear` goes back.
    KeySpec(
        "escape",
        "esc",
        "clear",
        "Back",
        "Back / close what is open, else clear marks and filter",
        _NAV,
        footer=False,
        views=_ALL,
        footer_in=("follow", "raw"),
    ),
    KeySpec(
        "s", "s", "submit", "Submit", "Submit a prompt or a JSONL file", _OPS, True, titled=True
    ),
    KeySpec("r", "r", "retry", "Retry", "Retry failed / cancelled rows", _OPS, True),
    KeySpec("c", "c", "cancel_jobs", "Cancel", "Cancel reserving / submitted rows", _OPS, True),
    KeySpec(
        "n",
        "n",
        "poll_now",
        "Poll now",
        "Poll now: make the marked / highlighted submitted rows due; the next pass polls them",
        _OPS,
        True,
        footer=False,
    ),
    KeySpec(
        "x",
        "x",
        "discard",
        "Discard",
        "Discard the highlighted finished row (confirm; archived first, as :prune)",
        _OPS,
        True,
        footer=False,
    ),
    KeySpec("o", "o", "recover", "Recover", "Force orphan recovery (resubmit)", _OPS, True),
    KeySpec("a", "a", "adopt", "Adopt", "Adopt an interaction id for the row", _OPS, True),
    KeySpec(
        "w",
        "w",
        "answer",
        "Answer",
        "Answer a row whose interaction requires action",
        _OPS,
        True,
        footer=False,
    ),
    KeySpec("R", "R", "replay", "Replay", "Replay done-but-unconsumed results", _OPS, True),
    KeySpec("ctrl+e", "ctrl+e", "export", "Export", "Export the filtered rows (JSONL/CSV)", _OPS),
    KeySpec(
        "P",
        "P",
        "toggle_pause",
        "Pause",
        "Pause / resume the reclaim loop",
        _LOOP,
        True,
        views=_ALL,
    ),
    KeySpec(
        "plus",
        "+",
        "slower",
        "Interval+",
        "Longer interval between passes",
        _LOOP,
        True,
        footer=False,
        views=_ALL,
    ),
    KeySpec(
        "minus",
        "-",
        "faster",
        "Interval-",
        "Shorter interval between passes",
        _LOOP,
        True,
        footer=False,
        views=_ALL,
    ),
    KeySpec(
        "ctrl+r",
        "ctrl+r",
        "refresh",
        "Refresh",
        "Re-read the ledger now",
        _NAV,
        footer=False,
        views=_ONE_JOB,
    ),
    KeySpec(
        "ctrl+p",
        "ctrl+p",
        "command_palette",
        "Palette",
        "Command palette",
        _NAV,
        footer=False,
        views=_ALL,
    ),
    KeySpec(
        "q",
        "q",
        "quit",
        "Quit",
        "Quit (the ledger keeps everything)",
        _NAV,
        titled=True,
        views=_ALL,
    ),
)

MUTATING = frozenset(k.action for k in KEYS if k.mutating)
#: Actions whose footer titles stay when the footer is too narrow for all of them.
TITLED = frozenset(k.action for k in KEYS if k.titled)

#: Bound on the app: the reclaim loop's pace (the app runs the loop) and quit.
#: Every other key acts on the ledger view and is bound on the main screen.
#: The footer lists the screen's bindings before the app's, so of the keys it
#: shows, these must stay the last ones in KEYS (the footer keeps KEYS' order).
APP_ACTIONS = frozenset({"toggle_pause", "slower", "faster", "quit"})
