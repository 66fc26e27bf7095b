"""`migrate`'s target: another ledger is refused before a row is written, and
one ledger is refused however its two names are spelt.

A copy keeps its ids, so a target that already holds another ledger's rows
would get the source's events and results filed under its own job of the
same id, and the source's waiting jobs sent by both ledgers. A target may
hold rows only when they are the source's as they are: a copy cut short,
which migrate run again finishes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.transfer import TABLES, copy_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ledger migrate copies into: a SQLite file, or a PostgreSQL database."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    (tmp_path / "b").mkdir()
    return str(tmp_path / "b" / "l.db")


async def _fill(db: str | Path, out: Path, keys: list[str], *, finish: int) -> None:
    """A ledger holding `keys`' jobs, the first `finish` sent and done (results
    and events stored), the others still waiting to be sent."""
    clock = ManualClock()
    ledger = await open_ledger(db, clock=clock)
    fake = FakeBackend(clock=clock, latency=5.0)
    engine = Engine(ledger, fake, DirectorySink(out))
    try:
        await engine.submit(
            [JobSpec(input=f"prompt of {k}", model="m", key=k) for k in keys[:finish]]
        )
        await engine.tick()
        clock.advance(10)
        await engine.tick()
        await engine.submit(
            [JobSpec(input=f"prompt of {k}", model="m", key=k) for k in keys[finish:]]
        )
    finally:
        await ledger.close()


async def _held(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table migrate copies, by table."""
    ledger = await open_ledger(db, readonly=True, create=False)
    try:
        return {
            t.name: [
                tuple(r)
                for r in await ledger.select(
                    Sql(lambda d, t=t: f"SELECT {t.columns} FROM {t.name} ORDER BY {t.key}")
                )
            ]
            for t in TABLES
        }
    finally:
        await ledger.close()


def _migrate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["migrate", *args])
    return result.exit_code, result.output


def test_a_target_holding_another_ledger_is_refused_before_a_row_is_written(
    tmp_path: Path, target: str
) -> None:
    source = tmp_path / "a.db"
    asyncio.run(_fill(source, tmp_path / "a-out", ["a1", "a2", "a3"], finish=2))
    asyncio.run(_fill(target, tmp_path / "b-out", ["b1"], finish=0))
    before = asyncio.run(_held(target))
    assert [r[1] for r in before["jobs"]] == ["b1"]  # its job 1, as the source has a job 1

    code, out = _migrate("--from", str(source), "--to", target)
    assert code == 2, out
    assert "already holds rows that are not the source's (jobs b1" in out
    assert "nothing was copied" in out
    # Not a row of the source in the target: b1 has no events or result of
    # a1's, and a3 (waiting) is not there for the target's ticks to send.
    assert asyncio.run(_held(target)) == before


def test_a_copy_cut_short_is_still_finished_by_running_migrate_again(
    tmp_path: Path, target: str
) -> None:
    source = tmp_path / "a.db"
    asyncio.run(_fill(source, tmp_path / "a-out", [f"a{n}" for n in range(12)], finish=8))

    class Cut(Exception):
        pass

    def cut(progress: object) -> None:
        raise Cut

    async def cut_short() -> None:
        src = await open_ledger(source, readonly=True, create=False)
        dst = await open_ledger(target)
        try:
            with pytest.raises(Cut):
                await copy_ledger(src, dst, batch=5, progress=cut)
        finally:
            await src.close()
            await dst.close()

    asyncio.run(cut_short())
    assert len(asyncio.run(_held(target))["jobs"]) == 5
    code, out = _migrate("--from", str(source), "--to", target)
    assert code == 0, out
    assert "holds every row" in out
    assert asyncio.run(_held(target)) == asyncio.run(_held(str(source)))


def test_one_ledger_under_two_names_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_fill(tmp_path / "l.db", tmp_path / "out", ["a1"], finish=0))
    before = asyncio.run(_held(str(tmp_path / "l.db")))
    (tmp_path / "link.db").symlink_to(tmp_path / "l.db")
    monkeypatch.chdir(tmp_path)
    for source, target in [
        ("l.db", "./l.db"),
        (str(tmp_path / "l.db"), "l.db"),
        (f"{tmp_path}/sub/../l.db", "l.db"),
        ("link.db", "l.db"),
    ]:
        code, out = _migrate("--from", source, "--to", target)
        assert code == 2 and "same ledger" in out, (source, target, out)
    # A SQLite file has no schema: a schema per side is still one file.
    code, out = _migrate("--from", "l.db", "--to", "l.db", "--from-schema", "x", "--to-schema", "y")
    assert code == 2 and "same ledger" in out, out
    assert asyncio.run(_held(str(tmp_path / "l.db"))) == before
