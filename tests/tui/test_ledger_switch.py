"""`:ledger PATH|URL` (issue 25, "switch ledgers without restarting", k9s's
contexts): the console moves to another ledger, its table, its engine and
its reads; a ledger it cannot open is said and nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import Status
from reclaim_tui.tui.widgets.command_line import CommandLine

from .conftest import Seeded
from .pilot_helpers import SIZE, notified, press, settle, until


def _other_ledger(tmp_path: Path, count: int) -> Path:
    """A second ledger with `count` reserved jobs, made by the CLI."""
    db = tmp_path / "other" / "ledger.db"
    db.parent.mkdir()
    jobs = tmp_path / "other.jsonl"
    jobs.write_text("".join(json.dumps({"input": f"other job {i}"}) + "\n" for i in range(count)))
    result = CliRunner().invoke(cli, ["submit", str(jobs), "--no-send", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db


@pytest.fixture
def other(tmp_path: Path) -> Path:
    return _other_ledger(tmp_path, 3)


async def command(pilot: object, line: str) -> None:
    app = pilot.app  # type: ignore[attr-defined]
    await press(pilot, "colon")  # type: ignore[arg-type]
    app.main.query_one(CommandLine).input.value = line
    await press(pilot, "enter")  # type: ignore[arg-type]


async def test_ledger_moves_the_table_and_the_engine_to_another_ledger(
    seeded: Seeded, other: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = {row.idem for row in app.table.rows_shown}
        assert before
        await command(pilot, f"ledger {other}")
        assert await until(pilot, notified(pilot, "now on"))
        await settle(pilot)
        shown = {row.idem for row in app.table.rows_shown}
        assert len(shown) == 3 and not shown & before
        assert str(other) in str(app.sub_title)
        assert app.config.settings.db == str(other)
        assert app.host is not None
        await app.host.tick()  # the engine works on the new ledger now
    ledger = await open_ledger(str(other), readonly=True)
    try:
        counts = await ledger.counts()
    finally:
        await ledger.close()
    assert counts.get(Status.SUBMITTED.value, (0, None))[0] == 3


async def test_a_ledger_it_cannot_open_is_said_and_nothing_moves(
    seeded: Seeded, tmp_path: Path
) -> None:
    app = seeded.app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = {row.idem for row in app.table.rows_shown}
        await command(pilot, f"ledger {tmp_path / 'nowhere.db'}")
        assert await until(pilot, notified(pilot, "still on"))
        await settle(pilot)
        assert {row.idem for row in app.table.rows_shown} == before
        assert app.config.settings.db == str(seeded.db)


async def test_a_read_only_console_moves_read_only(seeded: Seeded, other: Path) -> None:
    app = seeded.app(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await command(pilot, f"ledger {other}")
        assert await until(pilot, notified(pilot, "now on"))
        await settle(pilot)
        assert len(app.table.rows_shown) == 3
        assert app.host is None and "read-only" in str(app.sub_title)
