"""One job followed live: its state on top, its timeline below, new events
appended at the bottom (as Temporal's workflow view does)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.core.models import Event
from reclaim_tui.tui.format import age, clock_time, next_poll, timestamp
from reclaim_tui.tui.widgets.detail_pane import lease_text, pair, usage_text

__all__ = ["FollowView", "event_head", "render_state"]

_TIMES = ("created_at", "state_since", "submitted_at", "done_at", "consumed_at", "updated_at")


def _times(detail: Detail) -> list[Content]:
    """Every timestamp of the row, two to a line."""
    cells = [
        Content.assemble(
            (f"{name.removesuffix('_at'):>13} ", "bold $text-muted"),
            f"{timestamp(getattr(detail.row, name)):<22}",
        )
        for name in _TIMES
    ]
    return [Content("").join([*cells[i : i + 2], Content("\n")]) for i in range(0, len(cells), 2)]


def render_state(detail: Detail, now: float, prices: PriceTable | None = None) -> Content:
    row = detail.row
    usage = usage_text(detail, prices)
    style = "bold $error" if row.status.value == "failed" else "bold $accent"
    what = detail.row.job.agent or row.model
    parts = [
        pair("status", f"{row.status.value} for {age(now - row.state_since)}", style),
        pair("model", what),
        pair("interaction", row.handle or "—"),
        pair(
            "attempts",
            f"{row.attempts} (polls {row.polls}, duplicates {row.duplicates})"
            f"{' · in flight' if row.inflight else ''}{' · held' if row.held else ''}",
        ),
        pair("lease holder", lease_text(detail, now)),
        pair("next poll", next_poll(row, now) or "—"),
        pair("last error", row.last_error or "—", "$error" if row.last_error else ""),
        *([pair("tokens", usage)] if usage is not None else []),
        *_times(detail),
    ]
    return Content("").join(parts).rstrip()


def event_head(event: Event, new: bool) -> Content:
    """What fits on the left of an event's note: id, time, actor, transition
    (UTC times of day: the dates are in the timestamps above)."""
    arrow = f"{event.from_status or '∅'} → {event.to_status or '∅'}"
    return Content.assemble(
        ("● " if new else "  ", "bold $success"),
        (f"#{event.id:<6}", "$text-muted"),
        (clock_time(event.at), "$text-muted"),
        # As wide as "console-loop", the longest actor the console writes.
        f"  {event.actor:<12} ",
        (f"{arrow:<24} ", "$accent"),
    )


def _event_row(event: Event, new: bool) -> Horizontal:
    """One line of the timeline; a long note wraps under itself, not under the head."""
    return Horizontal(
        Static(event_head(event, new), classes="event-head"),
        Static(Content(event.note), classes="event-note"),
        classes="event",
    )


class FollowView(Vertical):
    """`show` a freshly read Detail (the follow screen reads it in a worker),
    `redraw` the same one at a new `now`. No I/O here."""

    DEFAULT_CSS = """
    FollowView { height: 1fr; }
    FollowView > #follow-state {
        height: auto; border: round $border; padding: 0 1;
        border-title-style: bold; border-title-color: $accent;
    }
    FollowView > #follow-timeline {
        height: 1fr; border: round $panel-lighten-2; padding: 0 1;
        border-title-color: $foreground-muted;
    }
    FollowView > #follow-timeline:focus { border: round $border; }
    FollowView .event { height: auto; }
    FollowView .event-head { width: auto; }
    FollowView .event-note { width: 1fr; }
    /* Narrow (80 columns): the note under its head, indented, its full width. */
    FollowView.-narrow .event { layout: vertical; }
    FollowView.-narrow .event-note { padding-left: 8; }
    """

    def __init__(
        self, idem: str, *, prices: PriceTable | None = None, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.idem = idem
        self.prices = prices
        self.detail: Detail | None = None
        #: Events shown when the job was first read; later ones are new.
        self._first_seen: int | None = None
        #: Events in the timeline so far (each later read appends the rest).
        self._shown = 0
        #: How many times a read was shown (tests wait on it).
        self.shows = 0

    def compose(self) -> ComposeResult:
        state = Static(f"reading {self.idem} …", id="follow-state")
        state.border_title = f"following {self.idem}"
        state.border_subtitle = "live"
        yield state
        with VerticalScroll(id="follow-timeline") as timeline:
            timeline.border_title = "timeline"
            timeline.can_focus = True
            yield Static("no events yet", id="follow-empty")

    def on_resize(self) -> None:
        self.set_class(self.size.width < 120, "-narrow")

    @property
    def timeline(self) -> VerticalScroll:
        return self.query_one("#follow-timeline", VerticalScroll)

    def show(self, detail: Detail | None, now: float) -> None:
        self.shows += 1
        timeline = self.timeline
        at_end = timeline.scroll_y >= timeline.max_scroll_y
        self.detail = detail
        if detail is None:
            self.query_one("#follow-state", Static).update(
                Content.styled(f"{self.idem} is gone from the ledger.", "bold $warning")
            )
            return
        events = detail.events
        if self._first_seen is None:
            self._first_seen = len(events)
        timeline.border_title = f"timeline · {len(events)} events"
        new = len(events) - self._first_seen
        timeline.border_subtitle = f"{new} new since you followed it ●" if new > 0 else ""
        if len(events) > self._shown:
            self.query_one("#follow-empty").display = False
            first = self._first_seen
            added = events[self._shown :]
            timeline.mount_all(_event_row(e, self._shown + i >= first) for i, e in enumerate(added))
            self._shown = len(events)
        self.redraw(now)
        if at_end:  # the operator is at the newest: stay there
            timeline.call_after_refresh(timeline.scroll_end, animate=False)

    def redraw(self, now: float) -> None:
        # The main screen redraws every follow view in the stack each refresh;
        # one being torn down (its screen dismissed) has no children left
        # (a "NoMatches" that failed the console's worker under load).
        shown = self.query("#follow-state").results(Static)
        state_widget = next(shown, None)
        if self.detail is not None and state_widget is not None:
            state_widget.update(render_state(self.detail, now, self.prices))
