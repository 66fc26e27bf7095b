"""Costs: the price table, one usage's cost, totals summed by the database
(SQLite and PostgreSQL), a resubmission's estimate, and `reclaim-tui costs`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaim_tui.cli.costs import costs
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.cost_estimate import estimate_resubmit
from reclaim_tui.core.cost_totals import CostFilter, cost_totals, grand_total
from reclaim_tui.core.costs import Tokens, cost_of, format_usd, load_prices
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError
from tests.helpers.ledger_rows import put_row

PRICES = load_prices(None, environ={})
FLASH = "gemini-flash-latest"  # 0.5 in, 3.0 out, 0.05 cached (prices.json)
PRO = "gemini-pro-latest"  # 2.0 in, 12.0 out; above 200k prompt tokens 4.0 / 18.0
FULL_USAGE = {
    "total_input_tokens": 1000,
    "total_cached_tokens": 200,
    "total_output_tokens": 500,
    "total_thought_tokens": 100,
    "total_tool_use_tokens": 50,
    "total_tokens": 1650,
}


def test_shipped_table_is_dated_and_prices_models_and_agents() -> None:
    assert PRICES.as_of == "2026-12-01"
    assert PRICES.source == "built-in"
    assert PRICES.price(FLASH) is not None
    assert PRICES.price("deep-research-preview-04-2026") is not None


def test_cost_of_prices_every_usage_field() -> None:
    # (1000 - 200 cached + 50 tool use) x 0.5 + 200 x 0.05 + (500 + 100 thought) x 3.0
    assert cost_of(FULL_USAGE, FLASH, PRICES) == pytest.approx(2235 / 1e6)


def test_cost_of_missing_fields_count_zero_and_no_counts_is_unknown() -> None:
    assert cost_of({"total_output_tokens": 10}, FLASH, PRICES) == pytest.approx(30 / 1e6)
    assert cost_of(None, FLASH, PRICES) is None
    assert cost_of({}, FLASH, PRICES) is None
    assert cost_of({"total_tokens": 99}, FLASH, PRICES) is None


def test_unknown_model_is_unknown_not_zero() -> None:
    assert cost_of(FULL_USAGE, "mystery-model", PRICES) is None


def test_long_prompts_take_the_long_context_price() -> None:
    short = {"total_input_tokens": 200_000, "total_output_tokens": 0}
    long = {"total_input_tokens": 200_001, "total_output_tokens": 0}
    assert cost_of(short, PRO, PRICES) == pytest.approx(0.4)
    assert cost_of(long, PRO, PRICES) == pytest.approx(200_001 * 4.0 / 1e6)


def test_override_file_replaces_by_name_json_and_toml(tmp_path: Path) -> None:
    as_json = tmp_path / "p.json"
    as_json.write_text(
        json.dumps({"as_of": "2027-01-05", "models": {FLASH: {"input": 1, "output": 1}}})
    )
    table = load_prices(as_json)
    assert (table.as_of, table.source) == ("2027-01-05", str(as_json))
    assert cost_of({"total_input_tokens": 10**6}, FLASH, table) == pytest.approx(1.0)
    assert table.price(PRO) == PRICES.price(PRO)  # the rest kept
    as_toml = tmp_path / "p.toml"
    as_toml.write_text("as_of = 2027-02-01\n[agents.my-agent]\ninput = 3\noutput = 4\n")
    from_toml = load_prices(as_toml)
    assert from_toml.as_of == "2027-02-01"
    assert cost_of({"total_output_tokens": 10**6}, "my-agent", from_toml) == 4.0


def test_environment_names_the_override(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"models": {"x-model": {"input": 1, "output": 2}}}))
    assert load_prices(None, environ={"RECLAIM_PRICES": str(path)}).price("x-model") is not None


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("bad.toml", "x = = 1", "not valid TOML"),
        ("list.json", "[1, 2]", "expected an object"),
        ("nooutput.json", '{"models": {"m": {"input": 1}}}', "'output'"),
        ("negative.json", '{"models": {"m": {"input": -1, "output": 1}}}', "models.m.input"),
        ("typo.json", '{"models": {"m": {"input": 1, "output": 1, "ouput": 2}}}', "ouput"),
        ("empty.json", "{}", "neither 'models' nor 'agents'"),
        ("nan.json", '{"models": {"m": {"input": NaN, "output": 1}}}', "finite"),
        ("inf.json", '{"models": {"m": {"input": 1, "output": Infinity}}}', "finite"),
        ("nan.toml", "[models.m]\ninput = nan\noutput = 1", "finite"),
        # Issue 22, point 9: these ended in RecursionError / OverflowError, or
        # were accepted and made `costs --json` print Infinity.
        ("deep.json", '{"models": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("deep.toml", "models = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ("huge.json", '{"models": {"m": {"input": 1' + "0" * 400 + ', "output": 1}}}', "huge"),
        ("huge.toml", "[models.m]\ninput = 1" + "0" * 400 + "\noutput = 1", "huge"),
        ("big.json", '{"models": {"m": {"input": 1e308, "output": 1}}}', "models.m.input"),
        (
            "above.json",
            '{"long_context_above": 9223372036854775808,'
            ' "models": {"m": {"input": 1, "output": 1}}}',
            "from 0",
        ),
        (
            "above.toml",
            "long_context_above = 9007199254740993\n[models.m]\ninput = 1\noutput = 1",
            "from 0",
        ),
        (
            "hugeabove.json",
            '{"long_context_above": 1'
            + "0" * 400
            + ', "models": {"m": {"input": 1, "output": 1}}}',
            "a huge number",
        ),
        (
            "negabove.json",
            '{"long_context_above": -1, "models": {"m": {"input": 1, "output": 1}}}',
            "from 0",
        ),
        (
            "boolabove.json",
            '{"long_context_above": true, "models": {"m": {"input": 1, "output": 1}}}',
            "a token count",
        ),
    ],
)
def test_a_bad_prices_file_is_named_with_its_problem(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_prices(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


def test_a_missing_prices_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        load_prices(tmp_path / "nope.json")


async def _world(ledger: Ledger, clock: ManualClock) -> dict[str, str]:
    keys = {
        "flash1": await put_row(ledger, clock, usage=FULL_USAGE),
        "flash2": await put_row(ledger, clock, usage={"total_output_tokens": 1000}),
        "pro_failed": await put_row(
            ledger, clock, model=PRO, end=Status.FAILED, usage={"total_input_tokens": 1000}
        ),
        "in_flight": await put_row(ledger, clock, end=Status.SUBMITTED),
        "mystery": await put_row(ledger, clock, model="mystery-model", usage=FULL_USAGE),
        "no_counts": await put_row(ledger, clock, usage={"total_tokens": 5}),
    }
    clock.advance(86_400)
    keys["agent"] = await put_row(
        ledger, clock, model="deep-research-preview-04-2026", agent=True,
        usage={"total_input_tokens": 10_000, "total_output_tokens": 20_000},
    )  # fmt: skip
    return keys


async def test_totals_by_status(ledger: Ledger, clock: ManualClock) -> None:
    await _world(ledger, clock)
    rows = {r.key: r for r in await cost_totals(ledger, PRICES, by="status")}
    assert list(rows) == ["submitted", "consumed", "failed"]
    consumed = rows["consumed"]
    assert (consumed.rows, consumed.priced, consumed.unknown) == (5, 3, 2)
    assert consumed.usd == pytest.approx((2235 + 3000) / 1e6 + (10_000 * 2 + 20_000 * 12) / 1e6)
    assert consumed.unknown_models == ("mystery-model",)
    assert consumed.input_tokens == 1000 + 1000 + 10_000  # the mystery row's tokens counted too
    assert rows["failed"].usd == pytest.approx(1000 * 2.0 / 1e6)
    assert (rows["submitted"].rows, rows["submitted"].priced, rows["submitted"].usd) == (1, 0, 0)
    total = grand_total(list(rows.values()))
    assert (total.rows, total.priced, total.unknown) == (7, 4, 2)


async def test_totals_by_model_and_day_and_filtered(ledger: Ledger, clock: ManualClock) -> None:
    await _world(ledger, clock)
    by_model = await cost_totals(ledger, PRICES, by="model")
    assert by_model[0].key == "deep-research-preview-04-2026"  # most spent first
    mystery = next(r for r in by_model if r.key == "mystery-model")
    assert (mystery.unknown, mystery.priced, mystery.usd) == (1, 0, 0.0)
    by_day = await cost_totals(ledger, PRICES, by="day")
    assert [r.key for r in by_day] == ["2027-01-15", "2027-01-16"]
    assert by_day[1].usd == pytest.approx(0.26)
    failed = await cost_totals(
        ledger, PRICES, by="model", where=CostFilter(statuses=frozenset({Status.FAILED}))
    )
    assert [(r.key, r.rows) for r in failed] == [(PRO, 1)]


async def test_estimate_resubmit_from_completed_runs_never_a_rows_partial_usage(
    ledger: Ledger, clock: ManualClock
) -> None:
    """A retry was estimated from the failed attempt's partial usage ($0.24
    for a Deep Research max row whose completed runs cost $1.13 on average:
    issue 32 item 7). A resend is a whole run: priced at what its model's
    completed runs cost in this ledger, else the table's typical figure."""
    keys = await _world(ledger, clock)
    never_sent = await put_row(ledger, clock, end=Status.RESERVING)
    unknown = await put_row(ledger, clock, model="mystery-model", end=Status.RESERVING)
    asked = [keys["pro_failed"], never_sent, unknown, "not-a-key"]
    got = await estimate_resubmit(ledger, asked, PRICES)
    # flash's completed runs with counts: FULL_USAGE (2235 µ$) and 1000 out (3000 µ$);
    # the average of their counts prices at the average of their costs. PRO has no
    # completed run and the shipped table no typical figure: unknown, its failed
    # attempt's usage (1000 input tokens, 2000 µ$) not counted.
    assert (got.rows, got.from_average, got.runs, got.from_typical, got.unknown) == (4, 1, 2, 0, 3)
    assert got.usd == pytest.approx((2235 + 3000) / 2 / 1e6, rel=1e-3)
    pro = PRICES.price(PRO)
    assert pro is not None
    typical = dataclasses.replace(
        PRICES, prices={**PRICES.prices, PRO: dataclasses.replace(pro, typical=0.25)}
    )
    got = await estimate_resubmit(ledger, [keys["pro_failed"]], typical)
    assert (got.from_typical, got.usd) == (1, pytest.approx(0.25))
    await put_row(ledger, clock, model=PRO, usage={"total_output_tokens": 100_000})  # $1.20
    await put_row(ledger, clock, model=PRO, end=Status.DONE, usage={"total_output_tokens": 50_000})
    got = await estimate_resubmit(ledger, [keys["pro_failed"]], typical)
    assert (got.from_average, got.runs, got.from_typical) == (1, 2, 0)
    assert got.usd == pytest.approx(0.9)  # (1.20 + 0.60) / 2, not the partial 0.002


def test_tokens_need_input_or_output() -> None:
    assert Tokens.from_usage({"total_input_tokens": 3}) == Tokens(input=3)
    assert Tokens.from_usage({"total_thought_tokens": 3}) is None


def test_costs_command_prints_json_and_refuses_a_bad_prices_file(
    db_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    async def seed() -> None:
        ledger = await open_ledger(db_url, clock=clock)
        try:
            await _world(ledger, clock)
        finally:
            await ledger.close()

    asyncio.run(seed())  # the command runs its own event loop
    runner = CliRunner()
    out = runner.invoke(costs, ["--db", db_url, "--by", "model", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["prices"]["as_of"] == "2026-12-01"
    assert data["total"]["unknown"] == 2
    assert {g["key"] for g in data["groups"]} >= {FLASH, PRO, "mystery-model"}
    text = runner.invoke(costs, ["--db", db_url, "--status", "failed"])
    assert text.exit_code == 0, text.output
    assert "failed" in text.stdout and "$0.0020" in text.stdout
    bad = tmp_path / "prices.json"
    bad.write_text("{oops")
    refused = runner.invoke(costs, ["--db", db_url, "--prices", str(bad)])
    assert refused.exit_code == 2
    assert str(bad) in refused.stderr and "not valid JSON" in refused.stderr


def test_dollars_below_a_hundredth_of_a_cent_are_not_shown_as_zero() -> None:
    assert format_usd(0.0) == "$0.0000"
    assert format_usd(0.0000124) == "<$0.0001"  # 15 tokens of a Flash model
    assert format_usd(0.00005) == "$0.0001"
    assert format_usd(0.0123) == "$0.0123"
    assert format_usd(1234.5) == "$1,234.50"


def test_costs_json_is_strict_json_and_a_rate_that_overflows_is_refused(
    db_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    """Issue 22, point 9: a price of 1e308 per 1M tokens times 2M tokens is
    infinity, and `costs --json` printed `Infinity` (not JSON)."""

    async def seed() -> None:
        ledger = await open_ledger(db_url, clock=clock)
        try:
            await put_row(ledger, clock, usage={"total_input_tokens": 2_000_000})
        finally:
            await ledger.close()

    asyncio.run(seed())
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {FLASH: {"input": 1e308, "output": 1.0}}}))
    out = CliRunner().invoke(costs, ["--db", db_url, "--prices", str(prices), "--json"])
    assert "Infinity" not in out.stdout
    assert out.exit_code == 2 and f"models.{FLASH}.input" in out.stderr, out.output
    fine = CliRunner().invoke(costs, ["--db", db_url, "--json"])
    assert fine.exit_code == 0, fine.output

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    json.loads(fine.stdout, parse_constant=refuse)


def test_costs_refuses_a_long_context_line_past_a_whole_number_both_engines_hold(
    db_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    """A `long_context_above` past 2**63-1 passed validation and ended `costs`
    on SQLite in a traceback (an integer it cannot bind)."""

    async def seed() -> None:
        ledger = await open_ledger(db_url, clock=clock)
        try:
            await put_row(ledger, clock, usage={"total_input_tokens": 2_000_000})
        finally:
            await ledger.close()

    asyncio.run(seed())
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"long_context_above": 2**63, "models": {FLASH: {"input": 1.0, "output": 1.0}}})
    )
    out = CliRunner().invoke(costs, ["--db", db_url, "--prices", str(prices)])
    assert out.exit_code == 2, out.output
    assert (
        "'long_context_above' must be a token count from 0 to 9,007,199,254,740,992" in out.stderr
    )
    assert "Traceback" not in out.output
    prices.write_text(
        json.dumps({"long_context_above": 2**53, "models": {FLASH: {"input": 1.0, "output": 1.0}}})
    )
    fine = CliRunner().invoke(costs, ["--db", db_url, "--prices", str(prices), "--json"])
    assert fine.exit_code == 0, fine.output
