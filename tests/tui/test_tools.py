"""The console's views over the whole ledger (issue 15): costs (`$`), charts
(`S`), `:prune` with the count in its confirmation, and a bulk retry whose
confirmation says what it will cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static

from reclaim_tui.core.models import Status
from reclaim_tui.tui.actions.tools import archive_path
from reclaim_tui.tui.screens.charts import ChartsScreen
from reclaim_tui.tui.screens.confirm import ConfirmScreen
from reclaim_tui.tui.screens.costs import CostsScreen
from reclaim_tui.tui.screens.follow import FollowScreen
from reclaim_tui.tui.widgets.command_line import CommandLine
from reclaim_tui.tui.widgets.detail_body import DetailBody
from reclaim_tui.tui.widgets.detail_pane import DetailPane
from tests.tui.conftest import Seeded
from tests.tui.pilot_helpers import SIZE, notified, press, select, settle, shown, until


async def _command(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await press(pilot, "colon")
    line = pilot.app.screen.query_one(CommandLine)
    line.input.value = text
    await press(pilot, "enter")


async def test_dollar_opens_the_costs_of_the_ledger(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "dollar_sign")
        assert await until(pilot, lambda: isinstance(app.screen, CostsScreen))
        screen = app.screen
        assert isinstance(screen, CostsScreen)
        assert await until(pilot, lambda: bool(screen.rows))
        by_status = {row.key: row for row in screen.rows}
        # The seeded consumed and done rows carry the fake's usage: priced.
        assert by_status["consumed"].priced == 1 and by_status["consumed"].usd > 0
        await press(pilot, "escape")
        assert not isinstance(app.screen, CostsScreen)


async def test_costs_in_a_tab_cover_that_tabs_rows(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "6")  # consumed
        await press(pilot, "dollar_sign")
        assert await until(pilot, lambda: isinstance(app.screen, CostsScreen))
        screen = app.screen
        assert isinstance(screen, CostsScreen)
        assert await until(pilot, lambda: bool(screen.rows))
        assert [row.key for row in screen.rows] == ["consumed"]
        assert "consumed tab" in screen.scope


async def test_s_and_colon_charts_open_the_charts(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "S")
        assert await until(pilot, lambda: isinstance(app.screen, ChartsScreen))
        await press(pilot, "escape")
        await _command(pilot, "charts")
        assert await until(pilot, lambda: isinstance(app.screen, ChartsScreen))


async def test_prune_asks_with_the_count_then_archives_and_deletes(seeded: Seeded) -> None:
    app = seeded.app()
    consumed = seeded.keys["consumed"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _command(pilot, "prune 10s")
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        screen = app.screen
        assert isinstance(screen, ConfirmScreen)
        assert "Prune 1 row (1 consumed)" in screen.question, screen.question
        await press(pilot, "y")
        assert await until(pilot, notified(pilot, "pruned 1 row"))
    assert await seeded.snapshot() and consumed not in await seeded.snapshot()
    archive = archive_path(app.config.files_dir, seeded.clock.now())
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert [line["idem"] for line in lines] == [consumed]


async def test_prune_refuses_unfinished_statuses_in_the_line(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _command(pilot, "prune 1s reserving")
        line = app.screen.query_one(CommandLine)
        assert line.is_open
        said = str(line.query_one("#command-message").render())
        assert "prune deletes only finished rows" in said, said
        assert not isinstance(app.screen, ConfirmScreen)
    assert await seeded.snapshot() == before


async def test_prune_with_nothing_that_old_says_so(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _command(pilot, "prune 30d failed")
        assert await until(pilot, notified(pilot, "nothing to prune"))
        assert not isinstance(app.screen, ConfirmScreen)
    assert await seeded.snapshot() == before


async def test_a_read_only_console_does_not_prune(seeded: Seeded) -> None:
    before = await seeded.snapshot()
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _command(pilot, "prune 10s")
        assert await until(pilot, notified(pilot, "read-only console: :prune is off"))
    assert await seeded.snapshot() == before


async def test_a_bulk_retry_says_what_it_will_cost(seeded: Seeded) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for role in ("failed", "cancelled"):
            await select(pilot, seeded.keys[role])
            await press(pilot, "space")
        await press(pilot, "r")
        assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        screen = app.screen
        assert isinstance(screen, ConfirmScreen)
        # A resend is a whole run: what their model's completed runs cost here.
        assert "Cost: about $" in screen.question, screen.question
        assert "their model's completed runs cost in this ledger" in screen.question
        await press(pilot, "n")
    assert (await seeded.get("failed")).status == Status.FAILED


async def test_the_detail_and_the_follow_view_show_a_result_s_tokens_and_cost(
    seeded: Seeded,
) -> None:
    """Issue 15: tokens per row, priced at the dated table (the fake answers
    7 input tokens and one output token per word)."""
    app = seeded.app()
    consumed = seeded.keys["consumed"]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "6")  # consumed
        await select(pilot, consumed)
        pane = app.query_one(DetailPane)
        assert await until(pilot, lambda: pane.prices is not None)

        def detail_text() -> str:
            return str(pane.query_one("#detail-body", DetailBody).content)

        assert await until(pilot, lambda: "$0.0001 (prices" in detail_text()), detail_text()
        line = next(x for x in detail_text().splitlines() if x.strip().startswith("tokens"))
        # 15 tokens of a Flash model: less than a hundredth of a cent, said so.
        assert "7 in · 8 out = <$0.0001 (prices as of" in line, line
        await press(pilot, "f")
        assert await until(pilot, lambda: isinstance(app.screen, FollowScreen))
        state = app.screen.query_one("#follow-state", Static)
        assert await until(pilot, lambda: "<$0.0001" in str(state.content)), str(state.content)
        await press(pilot, "escape")
        # A row with no result yet says nothing of tokens.
        await press(pilot, "1")
        await select(pilot, seeded.keys["submitted"])
        assert await until(pilot, lambda: "tokens" not in detail_text())


async def test_costs_cover_the_rows_the_filter_shows(seeded: Seeded) -> None:
    """Issue 15: totals per filter (they covered the whole tab, the filter
    ignored; on the orphans tab, every row of the ledger)."""
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)

        async def costs() -> CostsScreen:
            await press(pilot, "dollar_sign")
            assert await until(pilot, lambda: isinstance(app.screen, CostsScreen))
            screen = app.screen
            assert isinstance(screen, CostsScreen)
            assert await until(pilot, lambda: bool(screen.rows))
            return screen

        for query, expected in (
            ("model:pro", {"done": 1, "submitted": 1}),  # done and submitted2
            ("Q3 billing", {"consumed": 1}),  # free text, through the index
        ):
            await press(pilot, "slash")
            app.query_one("#filter").value = ""  # type: ignore[attr-defined]
            await pilot.press(*query, "enter")
            count = sum(expected.values())
            assert await until(pilot, lambda: len(shown(pilot)) == count)  # noqa: B023
            screen = await costs()
            assert {row.key: row.rows for row in screen.rows} == expected, query
            assert f"filter '{query}'" in screen.scope
            await press(pilot, "escape")
        await press(pilot, "slash")
        app.query_one("#filter").value = ""  # type: ignore[attr-defined]
        await pilot.press("enter")
        await press(pilot, "3")  # orphans
        assert await until(pilot, lambda: len(shown(pilot)) >= 1)
        orphans = len(shown(pilot))
        screen = await costs()
        assert {row.key: row.rows for row in screen.rows} == {"reserving": orphans}
        assert screen.scope == "the orphans tab"


async def test_a_broken_price_file_leaves_the_tokens_unpriced_and_says_so_at_costs(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "prices.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("RECLAIM_PRICES", str(bad))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "6")  # consumed
        await select(pilot, seeded.keys["consumed"])
        body = app.query_one(DetailPane).query_one("#detail-body", DetailBody)
        assert await until(pilot, lambda: "7 in · 8 out" in str(body.content))
        assert "$" not in str(body.content)  # no price table: tokens only
        await press(pilot, "dollar_sign")
        assert await until(pilot, notified(pilot, "prices file"))
        assert not isinstance(app.screen, CostsScreen)
