"""The highlighted row in full: spec, handle, lease, timestamps, result, timeline."""

from __future__ import annotations

import json
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content

from reclaim_tui.core.costs import PriceTable, Tokens, cost_of, format_usd
from reclaim_tui.core.ledger.console.views import Detail
from reclaim_tui.core.ledger.owner import LeaseOwner
from reclaim_tui.core.models import Row
from reclaim_tui.core.row_notes import ASKS, NOT_FOUND, PLAN_READY
from reclaim_tui.tui.format import age, next_poll, timestamp
from reclaim_tui.tui.glossary import GlossaryScreen
from reclaim_tui.tui.widgets.detail_body import DetailBody
from reclaim_tui.tui.widgets.textual_private import retitle

__all__ = ["DetailPane", "lease_text", "pair", "render_detail", "spec_text", "usage_text"]

_PREVIEW = 600
_TIMES = ("created_at", "state_since", "submitted_at", "done_at", "consumed_at", "updated_at")
EMPTY_HINT = Content.assemble(
    ("Nothing to show here.\n\n", "bold"),
    "Press ",
    ("s", "bold $accent"),
    " to submit a prompt or a JSONL file, ",
    ("/", "bold $accent"),
    " to change the filter, ",
    ("1", "bold $accent"),
    " for every status.\nFrom a shell: ",
    ("reclaim-tui submit jobs.jsonl", "bold"),
    " or a cron ",
    ("reclaim-tui tick --jobs jobs.jsonl", "bold"),
    " — this console shows their rows as they change.",
)


def pair(name: str, value: object, style: str = "") -> Content:
    return Content.assemble((f"{name:>13} ", "bold $text-muted"), (str(value), style), "\n")


def _heading(text: str) -> Content:
    return Content.assemble("\n", (text, "bold $accent"), "\n")


def spec_text(spec: str) -> str:
    try:
        data = json.loads(spec)
    except ValueError:
        return spec
    value = data.get("input")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    config = data.get("config")
    return text + (f"\nconfig: {json.dumps(config, ensure_ascii=False)}" if config else "")


def lease_text(detail: Detail, now: float) -> str:
    row = detail.row
    if not row.lease_owner:
        return "—"
    alive = {True: "alive", False: "dead", None: "unknown"}[detail.holder_alive]
    left = row.lease_until - now
    until = f"expires in {age(left)}" if left > 0 else "expired"
    owner = LeaseOwner.parse(row.lease_owner)  # who holds it: :fleet lists them all
    who = f"{owner.host} pid {owner.pid}" if owner is not None else row.lease_owner
    return f"{who} ({alive}, {until})"


def usage_text(detail: Detail, prices: PriceTable | None) -> str | None:
    """The stored result's tokens and what they cost at `prices` (None: no
    result yet; without `prices`, the tokens alone)."""
    result = detail.result
    if result is None:
        return None
    tokens = Tokens.from_usage(result.usage)
    if tokens is None:
        return "no token counts in the answer"
    parts = [f"{tokens.input:,} in", f"{tokens.output:,} out"]
    for count, name in (
        (tokens.thought, "thinking"),
        (tokens.cached, "cached"),
        (tokens.tool_use, "tool use"),
    ):
        if count:
            parts.append(f"{count:,} {name}")
    text = " · ".join(parts)
    if prices is None:
        return text
    target = detail.row.job.agent or detail.row.model
    usd = cost_of(result.usage, target, prices)
    if usd is None:
        return f"{text} (no price for {target})"
    return f"{text} = {format_usd(usd)} (prices as of {prices.as_of})"


def _timeline(detail: Detail) -> list[Content]:
    parts = [_heading(f"timeline ({len(detail.events)} events)")]
    # As wide as the longest actor shown ("console-loop" is 12), at least 8.
    width = max((len(e.actor) for e in detail.events), default=0)
    width = max(8, width)
    for event in detail.events:
        arrow = f"{event.from_status or '∅'} → {event.to_status or '∅'}"
        parts.append(
            Content.assemble(
                (timestamp(event.at), "$text-muted"),
                f"  {event.actor:<{width}} ",
                (f"{arrow:<24}", "$accent"),
                f" {event.note}\n",
            )
        )
    return parts


def _job_lines(detail: Detail) -> list[Content]:
    """What the job asked for beyond its input: agent or model, labels,
    deadline, and the job it continues (a chain)."""
    job = detail.row.job
    lines = [pair("agent", job.agent) if job.agent else pair("model", detail.row.model)]
    if job.labels:
        lines.append(pair("labels", ", ".join(f"{k}={v}" for k, v in sorted(job.labels.items()))))
    if job.deadline is not None:
        lines.append(pair("deadline", f"{age(job.deadline)} after submit"))
    if detail.inbox_used and detail.row.status.value in ("done", "consumed"):
        by = "a webhook event" if _by_event(detail) else "a poll"
        lines.append(pair("completed by", by))
    if job.previous:
        prev = detail.previous
        where = (
            f"{prev.status.value}, interaction {prev.handle or '—'}"
            if prev is not None
            else "not in the ledger"
        )
        lines.append(pair("follows", f"{job.previous} ({where})"))
    return lines


def _by_event(detail: Detail) -> bool:
    """Whether an event for the row's interaction came before it was seen done."""
    done_at = detail.row.done_at
    return detail.event_at is not None and (done_at is None or detail.event_at <= done_at)


def _asks(detail: Detail) -> list[Content]:
    """A held row's question, with what to do about it."""
    row = detail.row
    if row.held and (row.last_error or "").startswith(PLAN_READY):
        return [
            _heading("research plan ready — w approves (or refines), c cancels"),
            Content.styled((row.last_error or "").removeprefix(PLAN_READY) + "\n", "italic"),
        ]
    if not (row.held and (row.last_error or "").startswith(ASKS)):
        return []
    return [
        _heading("the interaction requires action — w answers, c cancels"),
        Content.styled((row.last_error or "").removeprefix(ASKS) + "\n", "italic"),
    ]


def _last_error(row: Row) -> Content:
    """The row's last error; a plan the agent answered with is no error: said as a plan."""
    note = row.last_error or ""
    if note.startswith(PLAN_READY):
        held = "held for you, below" if row.held else "answered, the research goes on"
        return pair("plan", f"ready ({held})", "bold")
    return pair("last error", note or "—", "$error" if note else "")


def _not_found(detail: Detail) -> list[Content]:
    """A row whose interaction answers 404 inside retention: what it means."""
    row = detail.row
    if not (row.last_error or "").startswith(NOT_FOUND):
        return []
    if row.held:
        heading = "404 past --gone-grace: held (still polled rarely) — c cancels, then retry"
    else:
        heading = "404 inside retention: no proof of loss, polled again (--gone-grace)"
    return [_heading(heading)]


def render_detail(detail: Detail, now: float, prices: PriceTable | None = None) -> Content:
    row = detail.row
    usage = usage_text(detail, prices)
    status_style = "bold $error" if row.status.value == "failed" else "bold"
    dead = [row.lease_owner] if detail.holder_alive is False and row.lease_owner else []
    orphan = " · orphan" if row.is_orphan(now, dead) else ""
    parts = [
        pair("key", row.idem, "bold"),
        pair(
            "status", f"{row.status.value} for {age(now - row.state_since)}{orphan}", status_style
        ),
        *_job_lines(detail),
        pair("handle", row.handle or "—"),
        pair("attempts", f"{row.attempts} (polls {row.polls}, duplicates {row.duplicates})"),
        pair("in flight", f"{'yes' if row.inflight else 'no'}{' · held' if row.held else ''}"),
        pair("lease", lease_text(detail, now)),
        pair("next poll", next_poll(row, now) or "—"),
        _last_error(row),
        *([pair("tokens", usage)] if usage is not None else []),
        *_asks(detail),
        *_not_found(detail),
        _heading("input"),
        Content(spec_text(row.spec)[:2000] + "\n"),
        _heading("timestamps (UTC)"),
    ]
    parts += [pair(name.removesuffix("_at"), timestamp(getattr(row, name))) for name in _TIMES]
    if detail.result is not None:
        text = detail.result.output_text
        more = f" … ({len(text):,} chars)" if len(text) > _PREVIEW else ""
        parts += [
            _heading(f"result of {detail.result.interaction_id}"),
            Content(text[:_PREVIEW] + more + "\n"),
        ]
    return Content("").join(parts + _timeline(detail))


def left_note(left: tuple[str, str]) -> Content:
    """The line that says the row shown before left the tab, and where it went."""
    idem, where = left
    return Content.assemble(
        (f"{idem} left this tab ({where}).", "bold $warning"),
        ("\nBelow: the row the cursor moved to.\n\n", "$text-muted"),
    )


class DetailPane(VerticalScroll):
    """Scrollable; `show` renders a Detail (no I/O here: the main screen loads
    it) and `redraw` renders it again at a new `now`, so that its ages move
    with the table's."""

    ALLOW_MAXIMIZE = True
    shown_idem: str | None = None
    #: Details drawn so far (benchmarks wait on it).
    shows = 0

    DEFAULT_CSS = """
    DetailPane {
        border: round $panel-lighten-2; padding: 0 1;
        border-title-color: $foreground-muted; border-title-style: bold;
    }
    DetailPane:focus-within { border: round $border; }
    DetailPane > DetailBody { width: 1fr; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "explain", "Words", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_subtitle = "? explains its words"
        #: The text shown (the glossary puts its words first).
        self._text = ""
        self._detail: Detail | None = None
        #: What the body shows (see `_update`).
        self._drawn: Content | None = None
        self._left: tuple[str, str] | None = None
        #: What a result's tokens cost (the main screen reads the table at start).
        self.prices: PriceTable | None = None

    def compose(self) -> ComposeResult:
        yield DetailBody(Content("Highlight a row to see its detail."), id="detail-body")

    def show(
        self,
        detail: Detail | None,
        now: float,
        empty: bool = False,
        left: tuple[str, str] | None = None,
    ) -> None:
        """Show `detail`; `left`: the row shown before left the tab (said until
        another row is shown)."""
        idem = detail.row.idem if detail is not None else None
        if left is not None or idem != self.shown_idem:
            self._left = left
        self.shown_idem, self._detail = idem, detail
        self.shows += 1
        if detail is None:
            retitle(self, "detail")
            self._update(self._with_note(self._empty_text(empty)))
            return
        retitle(self, f"detail · {detail.row.idem}")
        self.redraw(now)

    def redraw(self, now: float) -> None:
        """The same detail, its ages counted to `now`."""
        if self._detail is not None:
            content = render_detail(self._detail, now, self.prices)
            # The row's own lines (not the timestamps' and timeline's labels).
            self._text = content.plain.split("timestamps (UTC)")[0]
            self._update(self._with_note(content))

    def forget_left(self, now: float) -> None:
        """Stop saying that a row left the tab (the operator moved on)."""
        if self._left is not None:
            self._left = None
            self.redraw(now)

    def action_explain(self) -> None:
        """`?` here: what the words of the row shown mean (tui/glossary.py)."""
        self.app.push_screen(GlossaryScreen(self._text))

    def _update(self, content: Content) -> None:
        """Show `content`; the same again is not (the table's redraws redraw the
        detail for its ages, and an update lays the screen out again)."""
        if content == self._drawn:
            return
        body = self._body()
        self._drawn = content
        width = body.content_size.width
        if width <= 0:  # not laid out yet: its first layout measures it
            body.update(content)
            return
        # A body of another height lays the whole screen out again, and
        # rows' details differ by a few lines: the body keeps its height
        # when the new detail fits it with a pane's height of blank or less
        # left below it (kept_height).
        body.update(content, layout=False)
        height = body.height_at(width)
        room = self.scrollable_content_region.height
        shown = body.content_size.height
        kept = kept_height(height, shown, room)
        if kept > height:
            body.blank_below(kept - height)
        if kept != shown:
            body.refresh(layout=True)

    def _body(self) -> DetailBody:
        return self.query_one("#detail-body", DetailBody)

    @staticmethod
    def _empty_text(empty: bool) -> Content:
        return EMPTY_HINT if empty else Content("The row is gone (or nothing is highlighted).")

    def _with_note(self, body: Content) -> Content:
        return left_note(self._left) + body if self._left is not None else body


def kept_height(height: int, shown: int, room: int) -> int:
    """The body's height for a detail of `height` lines in a pane of `room`
    lines, after a body of `shown` lines: a detail shorter than the pane
    fills it (no scrollbar either way), and the height shown stays while the
    detail fits it with at most a pane's height left blank below it."""
    floor = max(height, room)
    if floor <= shown <= floor + room:
        return shown
    return floor
