"""The main screen's views over the whole ledger and its bulk tools: costs
(`$`), charts (`S`), `:prune`, submit (`s`) and export (`E`). Each read is
called from a worker of the main screen, so it runs off the UI's loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path

from reclaim_tui.core.cost_estimate import Estimate, estimate_resubmit
from reclaim_tui.core.cost_totals import CostFilter
from reclaim_tui.core.costs import PriceTable, load_prices
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.prune import count_prunable
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError, LedgerError
from reclaim_tui.tui import operations, questions
from reclaim_tui.tui.actions.port import MainPort
from reclaim_tui.tui.messages import ActionFinished, SubmitFinished
from reclaim_tui.tui.screens.charts import ChartsScreen, chart_loader
from reclaim_tui.tui.screens.costs import CostsScreen, cost_loader
from reclaim_tui.tui.screens.export import ExportRequest, ExportScreen
from reclaim_tui.tui.screens.submit import SubmitRequest, SubmitScreen
from reclaim_tui.tui.widgets.command_line import Command, prune_arguments
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from reclaim_tui.tui.widgets.status_tabs import StatusTabs

__all__ = [
    "archive_path",
    "export",
    "open_charts",
    "open_costs",
    "prices_for_filter",
    "prune_rows",
    "resubmit_estimate",
    "show_prices_in_detail",
    "submit",
]


async def _prices(screen: MainPort) -> PriceTable | None:
    """The price table (the shipped one, or $RECLAIM_PRICES), read once."""
    if screen.prices is None:
        try:
            screen.prices = await asyncio.to_thread(load_prices, None)
        except ConfigError as exc:
            screen.notify(str(exc), severity="error", timeout=10)
            return None
    return screen.prices


def prices_for_filter(screen: MainPort, text: str) -> None:
    """A filter's `cost` word prices the rows at the console's price table (the
    one `$` uses): read it now if it was not yet (a small file, once);
    ValueError, and the filter is refused, when it cannot be read."""
    if screen.prices is not None or all(w.kind != "cost" for w in RowFilter.parse(text).words):
        return
    try:
        screen.prices = load_prices(None)
    except ConfigError as exc:
        raise ValueError(f"a cost filter needs the price table: {exc}") from None


async def show_prices_in_detail(screen: MainPort) -> None:
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


async def open_costs(screen: MainPort) -> None:
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


async def open_charts(screen: MainPort) -> None:
    prices = await _prices(screen)
    reader = screen.feed.reader
    if prices is None or reader is None:
        return
    screen.app.push_screen(ChartsScreen(chart_loader(reader.background, prices)))


async def resubmit_estimate(screen: MainPort, idems: Sequence[str]) -> Estimate | None:
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


async def prune_rows(screen: MainPort, command: Command) -> None:
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
    question = questions.prune_question(found, shown_age, archive)
    host = screen.engine_host()

    async def run() -> operations.Done:
        return await operations.run_prune(host, statuses, age, archive, now)

    screen.confirm("prune", question, f"Prune {found.count:,}", lambda: screen.operate(run))


def submit(screen: MainPort) -> None:
    """The submit dialog; its jobs are sent through the engine host in a worker."""
    default = screen.config.settings.model
    models = sorted({default, *screen.config.models})

    def send(request: SubmitRequest) -> None:
        screen.run_worker(_submit_jobs(screen, request, dialog), group="ops")

    dialog = SubmitScreen(default, models, send)

    def finished(text: str | None) -> None:
        if text:
            screen.post_message(ActionFinished(text))

    screen.app.push_screen(dialog, finished)


async def _submit_jobs(screen: MainPort, request: SubmitRequest, dialog: SubmitScreen) -> None:
    engine, default = screen.engine_host(), screen.config.settings.model
    reader = screen.feed.reader
    in_ledger = None if reader is None else reader.rows_by_idem
    outcome = await operations.submit_jobs(engine, request, default, dialog.post_message, in_ledger)
    if isinstance(outcome, SubmitFinished):
        screen.pace.kick()
        if outcome.idem is not None:
            _show_row(screen, outcome.idem)
    dialog.post_message(outcome)


def _show_row(screen: MainPort, idem: str) -> None:
    """The row just submitted, under the cursor: the All tab filtered to its key."""
    screen.state.tab = "all"
    screen.query_one(StatusTabs).active = "all"
    screen.state.set_filter(idem)
    screen.feed.load_page("first", cursor="top")


def export(screen: MainPort, last: ExportRequest | None = None, error: str = "") -> None:
    """The export dialog; after a failed write, again with its path and why."""
    config, state = screen.config, screen.state
    if last is None:
        name = str(config.files_dir / questions.export_file_name(config.clock.now()))
        last = ExportRequest(name, "jsonl")
    view = state.view()
    summary = questions.export_summary(state.tab_spec.label, state.filter_text, config.files_dir)

    def chosen(request: ExportRequest | None) -> None:
        if request:
            screen.run_worker(_export(screen, view, request), group="ops")

    screen.app.push_screen(ExportScreen(summary, last.path, error, last.fmt), chosen)


async def _export(screen: MainPort, view: View, request: ExportRequest) -> None:
    files_dir = screen.config.files_dir
    done = await operations.export_rows(screen.feed.opened(), view, request, files_dir)
    if done.finished.severity == "error":
        # A bad path closed the dialog and lost what was typed: keep both.
        export(screen, request, done.finished.text)
        return
    screen.post_message(done.finished)
