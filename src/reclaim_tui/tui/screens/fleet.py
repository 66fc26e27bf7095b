"""`:fleet`: who holds leases on the ledger and who wrote to it in the last
hour (core/ledger/fleet.py), read when opened; `r` reads it again."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.fleet import Fleet, read_fleet
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.tui.format import age

__all__ = ["FleetScreen", "fleet_text"]


def fleet_text(fleet: Fleet, now: float) -> Content:
    parts: list[Content | str | tuple[str, str]] = [
        ("Lease holders", "bold $accent"),
        "  (a lease: a process working on a row; dead: provably gone, its leases void)\n",
    ]
    if not fleet.holders:
        parts.append("  none: no row names a lease owner\n")
    for h in fleet.holders:
        alive = {True: ("alive", "$success"), False: ("dead", "$error"), None: ("?", "")}
        word, style = alive[h.alive]
        left = h.until - now
        until = f"lease ends in {age(left)}" if left > 0 else f"last lease ended {age(-left)} ago"
        pid = f"pid {h.pid}" if h.pid is not None else "pid ?"
        parts += [
            (f"  {h.host:<24} {pid:<11}", "bold"),
            (f" {word:<5}", style),
            f"  holds {h.held:,} · lapsed {h.lapsed:,} · {until}\n",
        ]
    parts += ["\n", ("Wrote in the last hour", "bold $accent"), "  (events, by actor)\n"]
    if not fleet.writers:
        parts.append("  nobody\n")
    for w in fleet.writers:
        parts.append(f"  {w.actor:<16} {w.events:>7,} events · last {age(now - w.last)} ago\n")
    return Content.assemble(*parts)


class FleetScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    FleetScreen { align: center middle; }
    FleetScreen > VerticalScroll {
        width: 96; max-width: 100%; max-height: 100%; height: auto;
        border: round $accent; background: $surface; padding: 0 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("r", "reload", "Read again"),
    ]

    def __init__(self, ledger: Ledger, clock: Clock) -> None:
        super().__init__()
        self.ledger, self.clock = ledger, clock

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "fleet: who works on this ledger"
            scroll.border_subtitle = "r reads again · esc closes"
            yield Static("reading…", id="fleet")

    def on_mount(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        self.run_worker(self._read(), exclusive=True)

    async def _read(self) -> None:
        now = self.clock.now()
        fleet = await read_fleet(self.ledger, now)
        self.query_one("#fleet", Static).update(fleet_text(fleet, now))
