"""`:fleet`: every process the registry knows (services, ticks, consoles,
inboxes, on every host: core/ledger/registry.py) with its state, last pass,
leases and whether it is alive, stale, gone or stopped; the lease holders
that never registered; who wrote to the ledger in the last hour
(core/ledger/fleet.py). Read when opened; `r` reads it again. A console
attached to a service also shows that service's own state and last pass, as
its control socket said it (service_view.py), and marks its line."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger.fleet import Fleet, Holder, Process, read_fleet
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.tui.format import age
from reclaim_tui.tui.service_view import ServiceView

__all__ = ["FleetScreen", "fleet_text"]


Part = Content | str | tuple[str, str]
#: A service's state word and its style.
_STATE_STYLE = {"up": "$success", "paused": "$warning", "draining": "$warning"}


def _service_parts(view: ServiceView) -> list[Part]:
    """The attached service, as its control socket said it last."""
    parts: list[Part] = [
        ("Attached service", "bold $accent"),
        "  (its own state, from its control socket)\n",
    ]
    s = view.state
    if s is None:
        why = f"gone: {view.gone}" if view.gone else "no answer yet"
        return [*parts, ("  " + why, "bold $error"), "\n\n"]
    return [
        *parts,
        (f"  pid {s.pid:<8} ", "bold"),
        (f"{s.state:<9}", _STATE_STYLE.get(s.state, "")),
        f" {view.pace_text()} · {s.passes:,} passes\n  {view.last_text()}\n\n",
    ]


def _interval(seconds: float | None) -> str:
    return "" if seconds is None else f"every {seconds:g}s · "


#: A registered process that is not running as it said, and its style.
_CONDITION_STYLE = {"stale": "bold $warning", "gone": "bold $error", "stopped": "$text-muted"}


def _process_parts(
    p: Process, holder: Holder | None, now: float, attached: str | None
) -> list[Part]:
    """One registered process: who, where, its state; its interval, leases and last pass.
    `attached`: the state the attached service's socket says (the registry's row
    is written between passes: a service paused a moment ago still says "up")."""
    if attached is not None:
        word, style = attached, _STATE_STYLE.get(attached, "")
    elif p.condition == "alive":
        word, style = p.state, _STATE_STYLE.get(p.state, "")
    else:
        word, style = p.condition, _CONDITION_STYLE[p.condition]
    pid = f"pid {p.pid}" if p.pid is not None else "pid ?"
    leases = f"holds {holder.held:,}" if holder is not None else "holds 0"
    if holder is not None and holder.lapsed:
        leases += f" · lapsed {holder.lapsed:,}"
    if p.condition == "stale":
        heard = f"no word for {age(now - p.seen_at)} · "
    elif p.condition == "gone":
        heard = "died without a clean exit · "
    elif p.last_pass_at is None or p.seen_at - p.last_pass_at > 1:
        heard = f"seen {age(now - p.seen_at)} ago · "
    else:
        heard = ""  # its last pass is when it was last heard from
    if p.last_pass_at is None:
        last = "no pass yet" if p.kind != "inbox" else "nothing counted yet"
    else:
        noun = "counts" if p.kind == "inbox" else "last pass"
        last = f"{noun} {age(now - p.last_pass_at)} ago: {p.last_pass or ''}"
    # The attached service's passes are counted once, in its own lines above.
    shown = p.kind != "inbox" and attached is None
    passes = f" · {p.passes:,} pass{'' if p.passes == 1 else 'es'}" if shown else ""
    return [
        (f"  {p.kind:<8} {p.host[:22]:<22} {pid:<11}", "bold"),
        (f" {word:<8}", style),
        f" {leases}",
        (" · the attached service" if attached is not None else "", "bold"),
        f"\n    {_interval(p.interval)}{heard}{last}{passes}\n",
    ]


def fleet_text(fleet: Fleet, now: float, service: ServiceView | None = None) -> Content:
    attached = service.state if service is not None else None
    parts: list[Part] = [*_service_parts(service)] if service is not None else []
    parts += [
        ("Processes", "bold $accent"),
        "  (as each says itself; stale: silent too long, gone: died)\n",
    ]
    if not fleet.processes:
        parts.append("  none registered yet\n")
    for p in fleet.processes:
        ours = attached is not None and p.kind == "service" and p.pid == attached.pid
        ours = ours and p.condition == "alive"
        state = attached.state if ours and attached is not None else None
        parts += _process_parts(p, fleet.holder(p.owner), now, state)
    registered = {p.owner for p in fleet.processes}
    holders = [h for h in fleet.holders if h.owner not in registered]
    parts += [
        "\n",
        ("Lease holders", "bold $accent"),
        "  (unregistered: a CLI command, an older version; a lease: a process working on a row)\n",
    ]
    if not fleet.holders:
        parts.append("  none: no row names a lease owner\n")
    elif not holders:
        parts.append("  none: every lease owner is a process above\n")
    for h in holders:
        alive = {True: ("alive", "$success"), False: ("dead", "$error"), None: ("?", "")}
        word, style = alive[h.alive]
        left = h.until - now
        until = f"lease ends in {age(left)}" if left > 0 else f"last lease ended {age(-left)} ago"
        pid = f"pid {h.pid}" if h.pid is not None else "pid ?"
        ours = attached is not None and h.pid == attached.pid
        parts += [
            (f"  {h.host:<24} {pid:<11}", "bold"),
            (f" {word:<5}", style),
            f"  holds {h.held:,} · lapsed {h.lapsed:,} · {until}",
            (f" · the attached service, {attached.state}" if ours and attached else "", "bold"),
            "\n",
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
        width: 120; max-width: 100%; max-height: 100%; height: auto;
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
        self.query_one("#fleet", Static).update(fleet_text(fleet, now, self._service()))

    def _service(self) -> ServiceView | None:
        """The attached service's view (app.py's `service` link), if any."""
        view = getattr(getattr(self.app, "service", None), "view", None)
        return view if isinstance(view, ServiceView) else None
