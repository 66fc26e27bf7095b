"""The main screen's views over the whole ledger: costs (`$`), charts (`S`)
and `:prune`. Kept out of screens/main.py (its size); each is called from a
worker of the main screen, so every read here is off the UI's loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reclaim_tui.core.cost_estimate import Estimate, estimate_resubmit
from reclaim_tui.core.cost_totals import CostFilter
from reclaim_tui.core.costs import PriceTable, load_prices
from reclaim_tui.core.ledger.prune import count_prunable
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError, LedgerError
from reclaim_tui.tui import operations
from reclaim_tui.tui.screens.charts import ChartsScreen, chart_loader
from reclaim_tui.tui.screens.costs import CostsScreen, cost_loader
from reclaim_tui.tui.widgets.command_line import Command, prune_arguments
from reclaim_tui.tui.widgets.detail_pane import DetailPane

if TYPE_CHECKING:
    from reclaim_tui.tui.screens.main import MainScreen

__all__ = [
    "archive_path",
    "open_charts",
    "open_costs",
    "prune_rows",
    "resubmit_estimate",
    "show_prices_in_detail",
]


async def _prices(screen: MainScreen) -> PriceTable | None:
    """The price table (the shipped one, or $RECLAIM_PRICES), read once."""
    if screen.prices is None:
        try:
            screen.prices = await asyncio.to_thread(load_prices, None)
        except ConfigError as exc:
            screen.notify(str(exc), severity="error", timeout=10)
            return None
    return screen.prices


async def show_prices_in_detail(screen: MainScreen) -> None:
    """Read the price table at start, so the detail prices a result's tokens;
    a broken override file is said when costs are opened (`_prices`), not here."""
    if screen.prices is None:
        try:
            screen.prices = await asyncio.to_thread(load_prices, None)
        except ConfigError:
            return
    panes = screen.query(DetailPane)
    if not panes:
        return  # the screen went away meanwhile
    pane = panes.first()
    pane.prices = screen.prices
    pane.redraw(screen.config.clock.now())


async def open_costs(screen: MainScreen) -> None:
    prices = await _prices(screen)
    reader = screen.feed.reader
    if prices is None or reader is None:
        return
    state, tab = screen.state, screen.state.tab_spec
    if state.filter_text or tab.orphans:
        # The rows the table shows, filter and all (the text through its index).
        try:
            sql, params = await reader.view_ids_sql(state.view())
        except LedgerError as exc:
            screen.notify(f"costs: {exc}", severity="error", timeout=10)
            return
        where: CostFilter | None = CostFilter(rows=(sql, tuple(params)))
        shown = f"the {tab.label} tab" if tab.status or tab.orphans else "every status"
        scope = f"{shown}, filter '{state.filter_text}'" if state.filter_text else shown
    else:
        where = CostFilter(statuses=frozenset({Status(tab.status)})) if tab.status else None
        scope = f"the {tab.label} tab" if tab.status else ""
    load = cost_loader(reader.background, prices, where)
    screen.app.push_screen(CostsScreen(load, prices, scope=scope))


async def open_charts(screen: MainScreen) -> None:
    prices = await _prices(screen)
    reader = screen.feed.reader
    if prices is None or reader is None:
        return
    screen.app.push_screen(ChartsScreen(chart_loader(reader.background, prices)))


async def resubmit_estimate(screen: MainScreen, idems: Sequence[str]) -> Estimate | None:
    """What sending these rows again would cost (None: no price table)."""
    prices = await _prices(screen)
    if prices is None:
        return None
    try:
        return await estimate_resubmit(screen.feed.opened().background, idems, prices)
    except LedgerError as exc:
        screen.notify(f"cost estimate: {exc}", severity="warning")
        return None


def archive_path(files_dir: Path, now: float) -> Path:
    """Where the console's `:prune` appends what it deletes (one file a day)."""
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    return files_dir / "archive" / f"pruned-{day}.jsonl"


async def prune_rows(screen: MainScreen, command: Command) -> None:
    """`:prune AGE [STATUS …]`: count, confirm with the count, then delete
    through the engine host (archived first)."""
    if screen.readonly:
        screen.notify("read-only console: :prune is off", severity="warning")
        return
    age, statuses = prune_arguments(command)
    now = screen.config.clock.now()
    try:
        found = await count_prunable(
            screen.feed.opened().background, statuses=statuses, older_than_s=age, now=now
        )
    except (LedgerError, ConfigError) as exc:
        screen.notify(f"prune: {exc}", severity="error")
        return
    shown_age = command.argument.split()[0]
    if not found.count:
        which = " or ".join(statuses)
        screen.notify(f"nothing to prune: no {which} row in that state for more than {shown_age}")
        return
    archive = archive_path(screen.config.files_dir, now)
    question = operations.prune_question(found, shown_age, archive)
    host = screen.engine_host()

    async def run() -> operations.Done:
        return await operations.run_prune(host, statuses, age, archive, now)

    screen.confirm("prune", question, f"Prune {found.count:,}", lambda: screen.operate(run))
