"""Structured filters (issue 25): `label:team=docs`, time ranges, attempts,
combined with each other and the free text, on both engines; an unknown
`word:` says so instead of matching nothing; named views from settings.toml
by `:view NAME`."""

from __future__ import annotations

import json
import tomllib
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest

from reclaim_tui.config import ConsoleSettings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from tests.helpers.pages import walk

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, shown, until

NOW = 1_800_000_000.0


@pytest.fixture
async def reader(db_url: str) -> AsyncIterator[ConsoleReader]:
    rows = []
    for n in range(60):
        labels = {"team": ["docs", "ops", "web"][n % 3]} if n % 4 else {}
        if n % 5 == 0:
            labels["tier"] = "gold"
        body: dict[str, object] = {"input": f"prompt {n} {'needle' if n % 2 else ''}", "model": "m"}
        if labels:
            body["labels"] = labels
        created = NOW - n * 600  # one every ten minutes, back ten hours
        rows.append(
            (
                f"k{n:03d}",
                json.dumps(body),
                "m",
                "submitted" if n % 2 else "failed",
                n % 4,
                created,
                created + 60,
                NOW - (n % 7) * 300,
            )
        )
    rows.append(("bad-spec", "not json {", "m", "failed", 1, NOW, NOW, NOW))
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
                rows,
            )
    finally:
        await ledger.close()
    r = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    await r.counts()
    yield r
    await r.close()


def labels_of(n: int) -> dict[str, str]:
    labels = {"team": ["docs", "ops", "web"][n % 3]} if n % 4 else {}
    if n % 5 == 0:
        labels["tier"] = "gold"
    return labels


CASES = {
    "label:team=docs": lambda n: labels_of(n).get("team") == "docs",
    "label:tier": lambda n: "tier" in labels_of(n),
    "label:team=docs label:tier=gold": lambda n: labels_of(n) == {"team": "docs", "tier": "gold"},
    "created<1h": lambda n: n * 600 < 3600,
    "created>=2h": lambda n: n * 600 >= 7200,
    "age>5h": lambda n: n * 600 - 60 > 5 * 3600,
    "updated<10m": lambda n: (n % 7) * 300 < 600,
    "attempts>2": lambda n: n % 4 > 2,
    "attempts:0": lambda n: n % 4 == 0,
    "needle attempts<2 label:team=ops": lambda n: (
        n % 2 == 1 and n % 4 < 2 and labels_of(n).get("team") == "ops"
    ),
    "status:failed created>1h updated<20m": lambda n: (
        n % 2 == 0 and n * 600 > 3600 and (n % 7) * 300 < 1200
    ),
}


@pytest.mark.parametrize("text", list(CASES))
async def test_structured_words_filter_on_both_engines(reader: ConsoleReader, text: str) -> None:
    view = View(filter=RowFilter.parse(text))
    got = sorted(await walk(reader, view, 7))
    if text.startswith("label"):  # a spec that is not JSON has no labels, and fails nothing
        assert "bad-spec" not in got
    got = [k for k in got if k != "bad-spec"]
    assert got == sorted(f"k{n:03d}" for n in range(60) if CASES[text](n))
    assert got, "every case matches some rows"


async def test_a_spec_not_json_naming_labels_in_capitals_fails_no_label_filter(
    reader: ConsoleReader, db_url: str
) -> None:
    """Only a spec naming `"labels"` is read as JSON on PostgreSQL: the test
    is case-sensitive, as JSON's keys are, so a hand-edited spec that is not
    JSON and says "LABELS" is not cast (which failed the page)."""
    ledger = await open_ledger(db_url)
    try:
        async with ledger.write() as con:
            await con.execute(
                Sql(
                    lambda d: (
                        "INSERT INTO jobs(idem, spec, model, status, attempts, created_at,"
                        f" state_since, updated_at) VALUES ({d.marks(8)})"
                    )
                ),
                ("caps-spec", 'not json "LABELS" {', "m", "failed", 1, NOW, NOW, NOW),
            )
    finally:
        await ledger.close()
    got = await walk(reader, View(filter=RowFilter.parse("label:team=docs")), 7)
    assert "caps-spec" not in got
    assert sorted(k for k in got if k != "bad-spec") == sorted(
        f"k{n:03d}" for n in range(60) if labels_of(n).get("team") == "docs"
    )


async def test_created_today_is_since_local_midnight(reader: ConsoleReader) -> None:
    got = set(await walk(reader, View(filter=RowFilter.parse("created:today")), 50))
    midnight = datetime.fromtimestamp(NOW).astimezone().replace(hour=0, minute=0, second=0)
    want = {f"k{n:03d}" for n in range(60) if NOW - n * 600 >= midnight.timestamp()}
    assert got - {"bad-spec"} == want


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("team:docs", "label:team=docs"),
        ("owner:me", "unknown filter word owner:"),
        ("cost>ten", "number of US dollars"),
        ("cost:0.10", "cost>0.5"),
        ("age>soon", "not an age"),
        ("attempts>two", "whole number"),
        ("label:=x", "label:KEY=VALUE"),
        ("updated=5m", "updated>1h"),
    ],
)
def test_bad_words_say_why(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("+", r"\+")):
        RowFilter.parse(text)


def test_quoted_text_and_plain_colons_stay_text() -> None:
    assert RowFilter.parse('"team:docs"').text == "team:docs"
    assert RowFilter.parse("10:30").text == "10:30"
    assert RowFilter.parse("status:failed").statuses


def test_views_round_trip_through_the_settings_file() -> None:
    views = (("docs", "label:team=docs age>1h"), ("stuck one", 'status:submitted "a:b"'))
    settings = ConsoleSettings(theme="nord", views=views)
    again = ConsoleSettings.from_toml(tomllib.loads(settings.to_toml()))
    assert again == settings
    with pytest.raises(ValueError, match="views"):
        ConsoleSettings.from_toml({"views": {"x": 3}})


async def test_filter_bar_and_saved_view(
    seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "settings.toml"
    config.write_text('[views]\nretried = "attempts>1"\nnew = "created<1m"\n')
    monkeypatch.setenv("RECLAIM_CONFIG", str(config))
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(shown(pilot)) == 8
        await press(pilot, "slash", *"team:docs", "enter")
        assert await until(pilot, notified(pilot, "label:team=docs"))
        assert len(shown(pilot)) == 8  # the old filter stays
        await press(pilot, "escape")
        await press(pilot, "colon", *"view new", "enter")
        assert await until(pilot, lambda: app.state.filter_text == "created<1m")
        assert await until(pilot, lambda: len(shown(pilot)) == 1)
        assert shown(pilot) == [seeded.keys["reserving"]]
        await press(pilot, "colon", *"view nope", "enter")
        message = app.screen.query_one("#command-message")
        assert await until(pilot, lambda: "retried" in str(message.render()))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("attempts>9223372036854775808", "up to 2147483647"),
        ("attempts>2147483648", "up to 2147483647"),
        ("attempts:" + "9" * 5000, "up to 2147483647"),
        ("attempts>²", "whole number"),
        ("cost>1" + "0" * 400, "at most 1,000,000,000,000"),
        ("cost>1000000000001", "at most 1,000,000,000,000"),
    ],
)
def test_filter_numbers_past_a_column_are_refused(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        RowFilter.parse(text)
    assert RowFilter.parse("attempts>" + "0" * 40 + "2").words[0].value == 2


async def test_the_largest_numbers_a_filter_takes_read_on_both_engines(
    reader: ConsoleReader,
) -> None:
    got = await walk(reader, View(filter=RowFilter.parse("attempts<2147483647")), 20)
    assert len(got) == 61
    assert await walk(reader, View(filter=RowFilter.parse("attempts>2147483647")), 20) == []


async def test_a_filter_number_past_2_63_keeps_the_console_and_its_filter(
    seeded: Seeded,
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press(pilot, "slash", *"attempts<3", "enter")
        assert await until(pilot, lambda: app.state.filter_text == "attempts<3")
        before = shown(pilot)
        await press(pilot, "slash", *" attempts>9223372036854775808", "enter")
        assert await until(pilot, notified(pilot, "up to 2147483647"))
        await settle(pilot)
        assert app.state.filter_text == "attempts<3"
        assert shown(pilot) == before
        assert app.is_running
