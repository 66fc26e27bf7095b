"""One line of state: loop running/paused, interval, last pass, sort, filter, window."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

__all__ = ["API_CALLS", "NOT_TRIED", "LoopBar", "LoopBarState", "fit"]

#: The API's word before any call was made to it.
NOT_TRIED = "not tried yet"
#: The counts of a pass (a service's totals) that say it called the API.
API_CALLS = (
    "sent",
    "adopted",
    "resubmitted",
    "polled",
    "not_found",
    "cancelled",
    "deferred",
    "errors",
)
#: A truncated part keeps at least this many cells, or goes altogether.
MIN_TRUNCATED = 16


@dataclass
class LoopBarState:
    #: running / paused / ticking / read-only / starting; attached to a
    #: service, the service's own: attaching / up / paused / draining / gone
    mode: str = "starting"
    interval: float = 2.0
    #: attached: the service's concurrency limit ("concurrency 16"; "" otherwise)
    calls: str = ""
    last: str = ""
    sort: str = ""
    filter: str = ""
    window: str = ""
    marks: int = 0
    #: "" until a pass says; "not tried yet" before any call; "ok", "degraded
    #: (…)" when some calls were refused for causes outside the jobs,
    #: "unreachable (…)" when no connection could be made, "unavailable (…)"
    #: when the breaker opened for another cause
    api: str = ""
    #: rows to look at: "2 past retention · 1 asks" ("" when none)
    attention: str = ""
    #: the webhook inbox: "inbox 12/min · last 3s ago · 2 refused" ("" without one)
    inbox: str = ""
    #: the inbox refused deliveries lately (shown as an error)
    inbox_alarm: bool = False
    #: "unavailable" while the console's looks at its ledger fail (tui/ledger_health.py)
    ledger: str = ""


@dataclass
class Part:
    """A piece of the bar; the lowest `keep` goes first when the bar is too narrow."""

    keep: int
    content: Content
    truncate: bool = False


def fit(parts: list[Part], width: int) -> Content:
    """The parts, in order, in `width` cells: the least kept are shortened
    (when they may be) or left out until the rest fits."""
    parts = list(parts)
    while (excess := sum(p.content.cell_length for p in parts) - width) > 0:
        victim = min(parts, key=lambda p: p.keep)
        room = victim.content.cell_length - excess
        if victim.truncate and room >= MIN_TRUNCATED:
            victim.content = victim.content.truncate(room, ellipsis=True)
            break
        parts.remove(victim)
    return Content("").join(p.content for p in parts)


def bar_parts(s: LoopBarState) -> list[Part]:
    """The bar's parts, in the order shown; marks and the mode are kept longest."""
    mode_style = {
        "paused": "bold $warning",
        "read-only": "bold $secondary",
        "ticking": "bold $accent",
        "draining": "bold $warning",
        "gone": "bold $error",
        "attaching": "bold $secondary",
    }.get(s.mode, "bold $success")
    parts = [Part(9, Content.styled(f"● {s.mode}", mode_style))]
    if s.ledger:
        parts.append(Part(8, Content.assemble(" │ ", (f"ledger {s.ledger}", "bold $error"))))
    # A gone service's pace is not known (what it was is not what runs).
    if s.mode not in ("read-only", "gone", "attaching"):
        parts.append(Part(3, Content(f" every {s.interval:g}s")))
        if s.calls:
            parts.append(Part(3, Content(f" · {s.calls}")))
    if s.api:
        style = {"ok": "$success", NOT_TRIED: "$text-muted"}.get(s.api, "bold $error")
        parts.append(Part(6, Content.assemble(" │ ", (f"API {s.api}", style))))
    if s.inbox:
        style = "bold $error" if s.inbox_alarm else "$text-muted"
        parts.append(Part(4, Content.assemble(" │ ", (s.inbox, style))))
    if s.attention:
        parts.append(Part(6, Content.assemble(" │ ", (f"⚠ {s.attention}", "bold $warning"))))
    if s.last:
        parts.append(Part(1, Content.assemble(" · ", (s.last, "$text-muted")), truncate=True))
    parts.append(Part(2, Content.assemble(" │ sort: ", (s.sort, "$accent"))))
    if s.filter:
        content = Content.assemble(" │ filter: ", (s.filter, "bold $warning"))
        parts.append(Part(4, content, truncate=True))  # cut before the count goes
    if s.window:
        parts.append(Part(5, Content(f" │ {s.window}")))
    if s.marks:
        parts.append(Part(8, Content.assemble(" │ ", (f"{s.marks:,} marked", "bold $primary"))))
    return parts


class LoopBar(Static):
    """Fits its line to its width: the last pass's summary is shortened first,
    the marks and the loop's mode are kept longest."""

    DEFAULT_CSS = """
    LoopBar { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._state = LoopBarState()
        self._drawn: Content | None = None

    def show(self, s: LoopBarState) -> None:
        self._state = s
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.content_region.width
        parts = bar_parts(self._state)
        # Before the first layout the width is 0: everything, fitted on resize.
        content = fit(parts, width) if width else Content("").join(p.content for p in parts)
        # The bar is shown again at every new window and every second's
        # counts, mostly unchanged: an update lays the screen out again.
        if content != self._drawn:
            self._drawn = content
            self.update(content, layout=False)  # one line, as wide as the screen, whatever it says
