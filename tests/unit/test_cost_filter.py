"""The console filter's `cost` word (issue 25): each row priced in SQL, on
SQLite and PostgreSQL, from the price table the console holds — the same
figure Python's pricing (core/costs.py, the one `$` sums) gives, and the
same rows kept; a row whose cost is unknown matches no `cost` word."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.cost_sql import install_prices, row_cost_sql
from reclaim_tui.core.cost_totals import CostFilter, cost_totals, grand_total
from reclaim_tui.core.costs import PriceTable, cost_of, load_prices
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.reads import stored_usage
from reclaim_tui.core.models import Status
from tests.helpers.pages import walk

NOW = 1_800_000_000.0
#: Rates chosen so that no product is a round number (and 0.1 + 0.2 is not 0.3).
OVERRIDE = {
    "as_of": "2027-01-05",
    "long_context_above": 1000,
    "models": {
        "tiered": {"input": 1.234567891234, "output": 9.87654321, "cached_input": 0.1,
                   "long_input": 2.2, "long_output": 14.000000001, "long_cached_input": 0.3},
        "half-tiered": {"input": 0.3, "output": 2.5, "long_input": 0.7},
        "flat": {"input": 0.1, "output": 0.2},
        "free": {"input": 0, "output": 0},
        "odd'name\\x": {"input": 3.3, "output": 33.3},
    },
    "agents": {"an-agent": {"input": 2.0, "output": 12.0, "long_output": 18.0}},
}  # fmt: skip
MODELS = [*OVERRIDE["models"], "an-agent", "gemini-flash-latest", "unpriced-model"]  # type: ignore[list-item]
FIELDS = (
    "total_input_tokens",
    "total_output_tokens",
    "total_thought_tokens",
    "total_cached_tokens",
    "total_tool_use_tokens",
)


@pytest.fixture
def prices(tmp_path: Path) -> PriceTable:
    """The shipped table overridden by a file, as `$RECLAIM_PRICES` gives it."""
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(OVERRIDE), encoding="utf-8")
    return load_prices(path, environ={})


@dataclass(frozen=True)
class Generated:
    idem: str
    model: str
    status: str
    attempts: int
    #: "none": no result row; else the result's usage column (None: NULL).
    usage: Any


def _usage(rng: random.Random) -> Any:
    """A usage as the API may give it: counts around the long-context line
    (1000 here), some fields missing or null, none at all, no usage."""
    kind = rng.random()
    if kind < 0.08:
        return "none"
    if kind < 0.12:
        return None
    if kind < 0.16:
        return {"total_tokens": 5}  # no input, no output: unknown
    usage: dict[str, Any] = {}
    for name in FIELDS:
        roll = rng.random()
        if roll < 0.15:
            continue  # missing: counts 0
        if roll < 0.2:
            usage[name] = None
        elif name == "total_input_tokens":
            usage[name] = rng.choice([rng.randint(0, 999), 1000, 1001, rng.randint(1001, 10**6)])
        else:
            usage[name] = rng.randint(0, 50_000)
    if rng.random() < 0.05:
        usage = {"total_input_tokens": 0, "total_output_tokens": 0}  # costs exactly 0
    given = usage.get("total_input_tokens") or 0
    if (usage.get("total_cached_tokens") or 0) > given:  # the cached part of the input
        usage["total_cached_tokens"] = rng.randint(0, given)
    return usage


def _odd_usage(rng: random.Random) -> dict[str, Any]:
    """More cached than input tokens (no API says so; a hand edit might):
    the fresh input counts 0, not less."""
    return {"total_input_tokens": rng.randint(0, 2000), "total_cached_tokens": 2001,
            "total_output_tokens": rng.randint(0, 9)}  # fmt: skip


def generate(count: int, seed: int) -> list[Generated]:
    """`count` rows; the odd ones (more cached than input) are the cancelled."""
    rng = random.Random(seed)
    rows = []
    for n in range(count):
        status = rng.choice(["consumed", "done", "failed", "submitted", "cancelled"])
        usage = _odd_usage(rng) if status == "cancelled" else _usage(rng)
        rows.append(Generated(f"c{n:04d}", rng.choice(MODELS), status, rng.randint(0, 3), usage))
    return rows


def python_cost(row: Generated, prices: PriceTable) -> float | None:
    usage = None if row.usage == "none" else row.usage
    return cost_of(usage, row.model, prices)


def _stored(usage: Any) -> str | None:
    """The usage column: JSON, NULL, or text as it is (a hand edit)."""
    if usage is None or isinstance(usage, str):
        return usage
    return json.dumps(usage)


async def seed(db_url: str, rows: list[Generated]) -> None:
    specs = [json.dumps({"input": f"prompt {r.idem}", "model": r.model}) for r in rows]
    jobs = [
        (r.idem, specs[n], r.model, r.status, r.attempts, NOW - n, NOW - n, NOW - n)
        for n, r in enumerate(rows)
    ]
    results = [
        (r.idem, f"i-{r.idem}", _stored(r.usage), NOW, r.idem) for r in rows if r.usage != "none"
    ]
    ledger = await open_ledger(db_url)
    try:
        async with ledger.write() as con:
            await con.executemany(
                Sql(
                    lambda d: (
                        "INSERT INTO jobs(idem, spec, model, status, attempts, created_at,"
                        " state_since,"
                        f" updated_at) VALUES ({d.p},{d.p},{d.p},{d.p},{d.p},{d.p},{d.p},{d.p})"
                    )
                ),
                jobs,
            )
            await con.executemany(
                Sql(
                    lambda d: (
                        "INSERT INTO results(job, idem, interaction_id, output_text, usage,"
                        " raw_json,"
                        f" stored_at) SELECT id, {d.p}, {d.p}, '', {d.p}, '{{}}', {d.p} FROM jobs"
                        f" WHERE idem = {d.p}"
                    )
                ),
                results,
            )
    finally:
        await ledger.close()


ROWS = generate(400, seed=25)


@pytest.fixture
async def reader(db_url: str, prices: PriceTable) -> AsyncIterator[ConsoleReader]:
    await seed(db_url, ROWS)
    r = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    r.prices = prices
    await r.counts()
    yield r
    await r.close()


async def test_the_generated_rows_cover_every_case(prices: PriceTable) -> None:
    costs = [python_cost(r, prices) for r in ROWS]
    assert any(c is None and r.model == "unpriced-model" for c, r in zip(costs, ROWS, strict=True))
    assert any(c is None and r.usage == "none" for c, r in zip(costs, ROWS, strict=True))
    assert any(c == 0.0 for c in costs)
    assert prices.long_context_above == 1000
    for model in ("tiered", "half-tiered", "an-agent"):
        sizes = [
            r.usage.get("total_input_tokens") or 0
            for r in ROWS
            if r.model == model and isinstance(r.usage, dict) and python_cost(r, prices)
        ]
        assert min(sizes) <= 1000 < max(sizes), model  # both sides of the tier


async def test_sql_prices_every_row_as_python_does(
    reader: ConsoleReader, prices: PriceTable
) -> None:
    ledger = reader.background
    await install_prices(ledger, prices)
    expr, params = row_cost_sql(prices, ledger.dialect)
    got = dict(await ledger.select(f"SELECT idem, {expr} FROM jobs", params))
    assert set(got) == {r.idem for r in ROWS}
    for row in ROWS:
        want = python_cost(row, prices)
        if want is None:
            assert got[row.idem] is None, row
        else:
            assert got[row.idem] == pytest.approx(want, rel=0, abs=1e-9), row
            assert got[row.idem] == want, row  # the same doubles, in the same order


def _thresholds(costs: list[float]) -> list[str]:
    """Dollar amounts between the rows' costs (and 0, which some rows cost)."""
    known = sorted(set(costs))
    picks = [known[len(known) * k // 8] for k in range(1, 8)]
    mids = [f"{(a + b) / 2:.15f}" for a, b in itertools.pairwise(picks)]
    return ["0", *mids, "1000000"]


async def test_the_filter_keeps_exactly_the_rows_python_prices_so(
    reader: ConsoleReader, prices: PriceTable
) -> None:
    costs = {r.idem: python_cost(r, prices) for r in ROWS}
    known = [c for c in costs.values() if c is not None]
    compare = {
        ">": lambda a, b: a > b,
        "<": lambda a, b: a < b,
        ">=": lambda a, b: a >= b,
        "<=": lambda a, b: a <= b,
    }
    for limit in _thresholds(known):
        for op, test in compare.items():
            got = await walk(reader, View(filter=RowFilter.parse(f"cost{op}{limit}")), 60)
            want = {k for k, c in costs.items() if c is not None and test(c, float(limit))}
            assert sorted(got) == sorted(want), f"cost{op}{limit}"
    # Unknown is neither cheap nor dear.
    cheap = set(await walk(reader, View(filter=RowFilter.parse("cost<1000000")), 60))
    dear = set(await walk(reader, View(filter=RowFilter.parse("cost>=1000000")), 60))
    assert cheap | dear == {k for k, c in costs.items() if c is not None}
    assert not dear


async def test_cost_combines_with_every_other_word(
    reader: ConsoleReader, prices: PriceTable
) -> None:
    costs = {r.idem: python_cost(r, prices) for r in ROWS}
    middle = sorted(c for c in costs.values() if c)[len(ROWS) // 4]
    limit = f"{middle:.12f}"
    by = {r.idem: r for r in ROWS}

    def dear(k: str) -> bool:
        c = costs[k]
        return c is not None and c > float(limit)

    cases = {
        f"cost>{limit} status:failed": lambda k: dear(k) and by[k].status == "failed",
        f"attempts>1 cost>{limit}": lambda k: dear(k) and by[k].attempts > 1,
        f"cost>{limit} model:tier": lambda k: dear(k) and "tier" in by[k].model,
        f"c01 cost>{limit}": lambda k: dear(k) and "c01" in k,
        f"cost>{limit} created<100s": lambda k: dear(k) and int(k[1:]) < 100,
        f"cost>{limit} cost<=$0.5": lambda k: dear(k) and (costs[k] or 0) <= 0.5,
    }
    for text, keep in cases.items():
        got = sorted(await walk(reader, View(filter=RowFilter.parse(text)), 40))
        assert got == sorted(k for k in by if keep(k)), text
        assert got, text


async def test_costs_of_a_cost_filtered_view_sum_its_rows(
    reader: ConsoleReader, prices: PriceTable
) -> None:
    """`$` over `cost>X`: the rows the filter keeps, every one priced. (`$`
    sums each group's tokens, then prices them: the cancelled rows' odd
    usages, clamped one by one, are left out.)"""
    tabs = frozenset(Status(s) for s in ("consumed", "done", "failed", "submitted"))
    view = View(tabs, filter=RowFilter.parse("cost>0.01"))
    sql, params = await reader.view_ids_sql(view)
    total = grand_total(
        await cost_totals(reader.background, prices, where=CostFilter(rows=(sql, tuple(params))))
    )
    want = [
        c
        for r in ROWS
        if (c := python_cost(r, prices)) is not None and c > 0.01 and r.status != "cancelled"
    ]
    assert total.rows == total.priced == len(want) > 0
    assert total.usd == pytest.approx(sum(want), rel=1e-12)


async def test_a_usage_that_is_not_json_is_unknown_on_sqlite(
    tmp_path: Path, prices: PriceTable
) -> None:
    """A usage edited by hand into something else has no token counts (as
    core/ledger/reads.py reads it): its cost is unknown, and no page fails."""
    db = str(tmp_path / "ledger.db")
    odd = Generated("c-odd", "flat", "done", 0, "{not json")
    await seed(db, [odd, Generated("c-ok", "flat", "done", 0, {"total_output_tokens": 5})])
    r = await ConsoleReader.open(db, clock=ManualClock(NOW))
    r.prices = prices
    try:
        await r.counts()
        assert await walk(r, View(filter=RowFilter.parse("cost>=0")), 5) == ["c-ok"]
        assert cost_of(stored_usage(odd.usage), odd.model, prices) is None
    finally:
        await r.close()


async def test_a_cost_word_without_a_price_table_is_refused(reader: ConsoleReader) -> None:
    reader.prices = None
    with pytest.raises(ValueError, match="price table"):
        await reader.page(View(filter=RowFilter.parse("cost>1")))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("cost>abc", "number of US dollars"),
        ("cost>-1", "number of US dollars"),
        ("cost>1e3", "number of US dollars"),
        ("cost>nan", "number of US dollars"),
        ("cost>", "number of US dollars"),
        ("cost:1", "cost>0.5, cost<0.01"),
        ("cost=1", "cost>0.5, cost<0.01"),
    ],
)
def test_bad_cost_words_say_why(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        RowFilter.parse(text)


def test_good_cost_words_parse_to_dollars() -> None:
    words = RowFilter.parse("cost>0.5 cost<=$2 cost>=.25 COST<1.").words
    assert [(w.kind, w.op, w.value) for w in words] == [
        ("cost", ">", 0.5),
        ("cost", "<=", 2.0),
        ("cost", ">=", 0.25),
        ("cost", "<", 1.0),
    ]


async def test_a_price_name_holding_sql_words_prices_only_that_name(
    db_url: str, tmp_path: Path
) -> None:
    """A price named `zz NOT INDEXED` is a name: model `zz` stays unpriced on
    both engines (it was SQL text, and PostgreSQL's translation dropped the hint)."""
    path = tmp_path / "prices.json"
    odd = {"zz NOT INDEXED": {"input": 1.0, "output": 1.0},
           "yy' OR '1'='1": {"input": 1.0, "output": 1.0},
           "xx INDEXED BY jobs_due": {"input": 1.0, "output": 1.0}}  # fmt: skip
    path.write_text(json.dumps({"as_of": "2027-01-05", "models": odd}), encoding="utf-8")
    table = load_prices(path, environ={})
    usage = {"total_input_tokens": 10, "total_output_tokens": 10}
    rows = [Generated(f"k-{m[:2]}", m, "done", 0, usage) for m in ("zz", "yy", "xx")]
    rows.append(Generated("k-named", "zz NOT INDEXED", "done", 0, usage))
    await seed(db_url, rows)
    r = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    r.prices = table
    try:
        await r.counts()
        assert await walk(r, View(filter=RowFilter.parse("cost>=0")), 5) == ["k-named"]
    finally:
        await r.close()


@pytest.mark.parametrize("models", [1, 3000, 33000])
def test_the_cost_sql_does_not_grow_with_the_price_table(models: int, tmp_path: Path) -> None:
    """One CASE branch per model (repeated per status branch of a page) made
    33,000 models a statement SQLite never finished compiling: the table is
    data now, its size in neither the statement nor its parameters."""
    path = tmp_path / "prices.json"
    entries = {f"m{n}": {"input": n % 10, "output": n % 7 + 1} for n in range(models)}
    path.write_text(json.dumps({"models": entries}, separators=(",", ":")), encoding="utf-8")
    table = load_prices(path, environ={})
    for dialect in ("sqlite", "postgres"):
        expr, params = row_cost_sql(table, dialect)
        assert len(expr) < 3000, dialect
        assert len(params) == (2 if dialect == "postgres" else 1)
        assert all(f"m{n}" not in expr for n in range(min(models, 50)))


async def test_a_large_price_table_prices_rows_on_both_engines(db_url: str, tmp_path: Path) -> None:
    """33,000 models: the filter keeps the rows Python prices so, and the
    SQLite table is filled once per connection and price table."""
    path = tmp_path / "prices.json"
    entries = {f"m{n}": {"input": n % 10, "output": n % 7 + 1} for n in range(33000)}
    path.write_text(json.dumps({"models": entries}, separators=(",", ":")), encoding="utf-8")
    table = load_prices(path, environ={})
    usage = {"total_input_tokens": 1000, "total_output_tokens": 1000}
    rows = [Generated(f"k{n}", f"m{n}", "done", 0, usage) for n in (0, 1, 7, 32999)]
    rows.append(Generated("k-none", "m33000", "done", 0, usage))
    await seed(db_url, rows)
    r = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    r.prices = table
    try:
        await r.counts()
        got = sorted(await walk(r, View(filter=RowFilter.parse("cost>0.002")), 10))
        want = sorted(
            g.idem for g in rows if (c := python_cost(g, table)) is not None and c > 0.002
        )
        assert got == want == ["k1", "k32999", "k7"]
        ids_sql, params = await r.view_ids_sql(View(filter=RowFilter.parse("cost>0.002")))
        ids_sql, params = await r.view_ids_sql(View(filter=RowFilter.parse("cost>0.002")))
        assert len(await r.background.select(ids_sql, params)) == 3
        if r.background.dialect == "sqlite":
            count = await r.background.select("SELECT count(*) FROM temp.reclaim_prices")
            assert count == [(len(table.prices),)]  # the shipped models too
    finally:
        await r.close()
