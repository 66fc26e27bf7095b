"""Costs: tokens and USD by status, model (or agent) or UTC day, with the
total, the price table's date and the rows whose price is unknown.

The screen does no I/O: it is given a loader (`cost_loader(ledger, prices)`
over a read-only ledger, or any `async (by) -> list[CostRow]`) and calls it
from a worker.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar, get_args

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from reclaim_tui.core.cost_totals import CostFilter, CostRow, GroupBy, cost_totals, grand_total
from reclaim_tui.core.costs import PRICES_ENV, PriceTable, format_usd
from reclaim_tui.core.ledger.port import Ledger

__all__ = ["CostLoader", "CostsScreen", "cost_loader", "totals_line"]

CostLoader = Callable[[GroupBy], Awaitable[list[CostRow]]]
_GROUPINGS: tuple[GroupBy, ...] = get_args(GroupBy)
_COLUMNS = ("rows", "priced", "unknown", "input", "output", "thought", "USD")


def cost_loader(ledger: Ledger, prices: PriceTable, where: CostFilter | None = None) -> CostLoader:
    """Totals read from `ledger` (the console's background reader), of the
    rows `where` selects (all when None)."""

    async def load(by: GroupBy) -> list[CostRow]:
        return await cost_totals(ledger, prices, by=by, where=where)

    return load


def totals_line(rows: list[CostRow]) -> str:
    """The line under the table: the total and what it leaves out."""
    total = grand_total(rows)
    text = f"total {format_usd(total.usd)} over {total.priced:,} priced rows of {total.rows:,}"
    if total.unknown:
        models = ", ".join(total.unknown_models) or "usage without token counts"
        noun = "row" if total.unknown == 1 else "rows"
        text += f" · unknown price: {total.unknown:,} {noun} ({models}), not in the total"
    return text


class CostsScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    CostsScreen { align: center middle; }
    CostsScreen > Vertical {
        width: 100%; max-width: 120; height: 90%;
        border: round $accent; background: $surface; padding: 0 1;
    }
    CostsScreen DataTable { height: 1fr; }
    CostsScreen #costs-total { color: $text; text-style: bold; }
    CostsScreen #costs-note { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "Close"),
        Binding("b", "cycle_by", "Group by status / model / day"),
        Binding("ctrl+r", "reload", "Re-read"),
    ]

    def __init__(
        self, load: CostLoader, prices: PriceTable, *, by: GroupBy = "status", scope: str = ""
    ) -> None:
        super().__init__()
        self.load = load
        self.prices = prices
        self.by: GroupBy = by
        #: which rows the totals cover, when not every row (the tab's status)
        self.scope = scope
        self.rows: list[CostRow] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "costs"
            box.border_subtitle = "b group by · ctrl+r re-read · esc closes"
            yield Static(self._heading(), id="costs-heading")
            yield DataTable(id="costs-table", cursor_type="row", zebra_stripes=True)
            yield Static("reading…", id="costs-total")
            yield Static(
                f"Prices change: as of {self.prices.as_of} from {self.prices.source};"
                f" override with --prices FILE or ${PRICES_ENV}.",
                id="costs-note",
            )

    def _heading(self) -> str:
        scope = f"{self.scope} · " if self.scope else ""
        return f"{scope}by {self.by} · prices as of {self.prices.as_of}"

    def on_mount(self) -> None:
        self.action_reload()

    def action_cycle_by(self) -> None:
        self.by = _GROUPINGS[(_GROUPINGS.index(self.by) + 1) % len(_GROUPINGS)]
        self.query_one("#costs-heading", Static).update(self._heading())
        self.action_reload()

    def action_reload(self) -> None:
        self._read(self.by)

    @work(exclusive=True, group="costs", exit_on_error=False)
    async def _read(self, by: GroupBy) -> None:
        try:
            rows = await self.load(by)
        except Exception as exc:  # a busy or unreachable ledger: said, not fatal
            self.query_one("#costs-total", Static).update(f"could not read the costs: {exc}")
            return
        if by == self.by:
            self.show(rows)

    def show(self, rows: list[CostRow]) -> None:
        """Fill the table with `rows` (one group each) and the totals line."""
        self.rows = rows
        table = self.query_one("#costs-table", DataTable)
        table.clear(columns=True)
        table.add_column(self.by, key="key")
        for name in _COLUMNS:
            table.add_column(name, key=name)
        for row in rows:
            cells = (
                row.rows, row.priced, row.unknown, row.input_tokens, row.output_tokens,
                row.thought_tokens,
            )  # fmt: skip
            numbers = [Text(f"{n:,}", justify="right") for n in cells]
            table.add_row(
                row.key, *numbers, Text(format_usd(row.usd), justify="right"), key=row.key
            )
        self.query_one("#costs-total", Static).update(totals_line(rows))
