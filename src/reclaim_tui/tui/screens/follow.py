"""`f`: one job followed live, whatever tab it moves out of.

The main screen's watch (feed.py) finds the ledger's changes; after each one
it calls `reload`, which reads the job again in a worker and shows it.
Between changes `redraw` moves the ages on. Esc goes back to the table.
"""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import Header

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.costs import PriceTable
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.models import Row
from reclaim_tui.errors import LedgerError
from reclaim_tui.tui.bindings import bindings
from reclaim_tui.tui.screens.help import HelpScreen
from reclaim_tui.tui.screens.job_screen import JobScreen
from reclaim_tui.tui.widgets.follow_view import FollowView
from reclaim_tui.tui.widgets.footer import ConsoleFooter

__all__ = ["FollowScreen"]


class FollowScreen(JobScreen):
    BINDINGS: ClassVar[list[BindingType]] = bindings(on_app=False, view="follow")

    def __init__(
        self,
        idem: str,
        reader: ConsoleReader,
        clock: Clock,
        *,
        readonly: bool,
        prices: PriceTable | None = None,
    ) -> None:
        super().__init__()
        self.idem = idem
        self.prices = prices
        self.reader = reader
        self.clock = clock
        self.readonly = readonly

    def compose(self) -> ComposeResult:
        yield Header()
        yield FollowView(self.idem, prices=self.prices, id="follow")
        yield ConsoleFooter()

    @property
    def follow_view(self) -> FollowView:
        return self.query_one(FollowView)

    def on_mount(self) -> None:
        self.follow_view.timeline.focus()
        self.reload()

    def job_row(self) -> Row | None:
        detail = self.follow_view.detail
        return detail.row if detail is not None else None

    def job_reader(self) -> ConsoleReader | None:
        return self.reader

    @work(group="follow", exclusive=True)
    async def reload(self) -> None:
        """Read the job again and show it (the ledger changed)."""
        try:
            detail = await self.reader.detail(self.idem)
        except LedgerError as exc:
            self.notify(f"ledger read failed: {exc}", severity="error")
            return
        if self.is_attached:
            self.follow_view.show(detail, self.clock.now())

    def redraw(self) -> None:
        """The same read, its ages counted to now."""
        self.follow_view.redraw(self.clock.now())

    def action_clear(self) -> None:
        self.dismiss()

    def action_refresh(self) -> None:
        self.reload()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(readonly=self.readonly, view="follow"))
