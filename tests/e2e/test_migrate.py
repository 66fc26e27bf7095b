"""`reclaim-tui migrate`: a SQLite ledger copied to PostgreSQL (and back),
every row, event, result and inbox entry, proven by a comparison of both.

The ledger copied holds rows in every status, orphans, stored results, an
inbox event and counters; the copy is cut short once and finished by running
it again; a finished copy run again writes nothing; a target row changed by
hand is found by `--check`; the copied PostgreSQL ledger goes on working
(new rows do not reuse copied ids).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.inbox import InboxEvent, count, record
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.transfer import compare, copy_ledger
from reclaim_tui.core.models import Actor, JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink

pytestmark = pytest.mark.postgres


async def _populate(path: Path, out: Path) -> dict[str, Status]:
    """A ledger with a row in every status, results, an orphan and the inbox."""
    clock = ManualClock()
    ledger = await open_ledger(path, clock=clock)
    fake = FakeBackend(clock=clock, latency=5.0)
    engine = Engine(ledger, fake, DirectorySink(out))
    specs = [JobSpec(input=f"migrate me {i} — ünïcode ✓ 100%", model="m") for i in range(40)]
    keys = [idempotency_key(s) for s in specs]
    try:
        await engine.submit(specs)
        await engine.tick()  # all submitted
        fake.fail(fake.handle_for(keys[0]))
        clock.advance(10)
        await engine.tick()  # done → consumed; keys[0] failed
        more = [JobSpec(input=f"later {i}", model="m") for i in range(5)]
        await engine.submit(more)
        await engine.operator.cancel(idempotency_key(more[0]), actor=Actor.CLI)
        await record(
            ledger,
            InboxEvent(
                webhook_id="msg_1",
                received_at=clock.now(),
                type="interaction.completed",
                interaction=fake.handle_for(keys[1]),
                job=keys[1],
                api_status="completed",
                signed_by="hmac",
            ),
        )
        await count(ledger, {"refused_signature": 3}, clock.now())
        return {k: r.status for k, r in (await ledger.get_many(keys)).items()}
    finally:
        await ledger.close()


def _migrate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["migrate", *args])
    return result.exit_code, result.output


def test_sqlite_ledger_migrates_to_postgresql_whole(tmp_path: Path, pg_dsn: str) -> None:
    db = tmp_path / "ledger.db"
    statuses = asyncio.run(_populate(db, tmp_path / "out"))
    assert {Status.CONSUMED, Status.FAILED} <= set(statuses.values())

    # Cut short after the first batch of jobs: a kill, or a server gone.
    class Cut(Exception):
        pass

    def stop_after_first(progress: object) -> None:
        raise Cut

    async def partial() -> None:
        source = await open_ledger(db, readonly=True, create=False)
        target = await open_ledger(pg_dsn)
        try:
            with pytest.raises(Cut):
                await copy_ledger(source, target, batch=10, progress=stop_after_first)
            assert not (await compare(source, target)).same
        finally:
            await source.close()
            await target.close()

    asyncio.run(partial())

    code, out = _migrate("--from", str(db), "--to", pg_dsn, "--batch", "7")
    assert code == 0, out
    assert "holds every row" in out
    for table in ("jobs", "events", "results", "inbox", "inbox_counters"):
        assert any(line.startswith(table) and line.endswith("same") for line in out.splitlines())

    # Again: nothing written, still the same.
    code, out = _migrate("--from", str(db), "--to", pg_dsn, "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["same"] is True
    assert all(c["written"] == 0 for c in report["copied"].values()), report["copied"]
    assert report["tables"]["jobs"]["source"] == 45
    assert report["tables"]["results"]["source"] >= 39
    assert report["tables"]["events"]["source"] == report["tables"]["events"]["target"] > 45

    async def use_the_copy() -> tuple[str, str]:
        ledger = await open_ledger(pg_dsn)
        try:
            src = await open_ledger(db, readonly=True, create=False)
            try:
                for key, status in statuses.items():
                    row = await ledger.get(key)
                    assert row is not None and row.status == status
                    assert await ledger.events(key) == await src.events(key)
                    assert await ledger.result(key) == await src.result(key)
            finally:
                await src.close()
            # New rows get ids past the copied ones; a hand edit shows up.
            inserted, _ = await ledger.insert_jobs([("fresh-key", "{}", "m")], "cli")
            assert inserted == ["fresh-key"]
            await ledger.add_event(next(iter(statuses)), "cli", "a note written later", None)
            async with ledger.write() as db_:
                await db_.execute(
                    Sql(lambda d: f"UPDATE jobs SET polls = polls + 1 WHERE idem = {d.p}"), (key,)
                )
            return key, "fresh-key"
        finally:
            await ledger.close()

    changed, fresh = asyncio.run(use_the_copy())
    code, out = _migrate("--from", str(db), "--to", pg_dsn, "--check", "--json")
    assert code == 1, out
    tables = json.loads(out)["tables"]
    assert changed in tables["jobs"]["first_different"]
    assert f"{fresh} (only in the target)" in tables["jobs"]["first_different"]
    assert tables["events"]["target"] == tables["events"]["source"] + 2  # reserved + note


def test_postgresql_ledger_migrates_back_to_sqlite(tmp_path: Path, pg_dsn: str) -> None:
    db = tmp_path / "ledger.db"
    asyncio.run(_populate(db, tmp_path / "out"))
    assert _migrate("--from", str(db), "--to", pg_dsn)[0] == 0
    back = tmp_path / "back.db"
    code, out = _migrate("--from", pg_dsn, "--to", str(back))
    assert code == 0, out
    code, out = _migrate("--from", str(db), "--to", str(back), "--check")
    assert code == 0, out


def test_migrate_refuses_a_missing_source_and_one_ledger_twice(tmp_path: Path) -> None:
    code, out = _migrate("--from", str(tmp_path / "none.db"), "--to", str(tmp_path / "x.db"))
    assert code == 4 and "no ledger here" in out
    assert not (tmp_path / "x.db").exists()
    code, out = _migrate("--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "a.db"))
    assert code == 2 and "same ledger" in out
