"""One line of state: loop running/paused, interval, last pass, sort, filter, window."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

__all__ = ["LoopBar", "LoopBarState"]


@dataclass
class LoopBarState:
    mode: str = "starting"  # running / paused / ticking / read-only / starting
    interval: float = 2.0
    last: str = ""
    sort: str = ""
    filter: str = ""
    window: str = ""
    marks: int = 0
    #: "" until a pass says; "ok", "degraded (…)" when some calls were refused
    #: for causes outside the jobs, "unavailable (…)" when the breaker opened
    api: str = ""


class LoopBar(Static):
    DEFAULT_CSS = """
    LoopBar { height: 1; background: $panel; color: $foreground; padding: 0 1; }
    """

    def show(self, s: LoopBarState) -> None:
        mode_style = {
            "paused": "bold $warning",
            "read-only": "bold $secondary",
            "ticking": "bold $accent",
        }.get(s.mode, "bold $success")
        parts: list[Content | str | tuple[str, str]] = [(f"● {s.mode}", mode_style)]
        if s.mode not in ("read-only",):
            parts.append(f" every {s.interval:g}s")
        if s.api:
            healthy = s.api == "ok"
            parts += [" │ ", (f"API {s.api}", "$success" if healthy else "bold $error")]
        if s.last:
            parts += [" · ", (s.last, "$text-muted")]
        parts += [" │ sort: ", (s.sort, "$accent")]
        if s.filter:
            parts += [" │ filter: ", (s.filter, "bold $warning")]
        if s.window:
            parts += [" │ ", s.window]
        if s.marks:
            parts += [" │ ", (f"{s.marks:,} marked", "bold $primary")]
        self.update(Content.assemble(*parts))
