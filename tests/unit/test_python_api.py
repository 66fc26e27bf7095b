"""The Python API (reclaim_tui.api): the seed's `tick(jobs, on_result)` in a
few lines, on the engine the CLI uses, with a fake backend on a manual clock."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import reclaim_tui
from reclaim_tui.api.settings import settings_for
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.jobsfile import check_job
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import Status

JOB = {"input": "Summarise RFC 9110", "model": "gemini-flash-latest"}


@pytest.fixture
def fake_api(clock: ManualClock) -> FakeBackend:
    return FakeBackend(clock=clock, latency=0.0)


def _connect(db_url: str, clock: ManualClock, fake_api: FakeBackend, **kw: Any) -> Any:
    return reclaim_tui.connect(db_url, backend=fake_api, clock=clock, **kw)


async def _until_settled(ledger: reclaim_tui.Ledger, clock: ManualClock, keys: list[str]) -> None:
    """Passes, the clock moved past each poll's due time, until every job settles."""
    for _ in range(20):
        await ledger.tick()
        jobs = await ledger.get_many(keys)
        if all(job.status == Status.CONSUMED for job in jobs.values()):
            return
        clock.advance(60)
    raise AssertionError(f"not consumed: {await ledger.get_many(keys)}")


async def test_submit_returns_the_keys_and_the_same_spec_twice_is_one_job(
    db_url: str, clock: ManualClock, fake_api: FakeBackend, tmp_path: Path
) -> None:
    async with _connect(db_url, clock, fake_api, out=str(tmp_path / "out")) as ledger:
        keys = await ledger.submit([JOB, dict(JOB), {"input": "other", "key": "mine"}])
        spec = check_job(dict(JOB), source="t", default_model="gemini-flash-latest")
        assert keys == [idempotency_key(spec), idempotency_key(spec), "mine"]
        again = await ledger.submit(reclaim_tui.JobSpec(input="other", model="m", key="mine2"))
        assert again == ["mine2"]
        jobs = await ledger.get_many(keys + again)
        assert sorted(jobs) == sorted({keys[0], "mine", "mine2"})
        assert {job.status for job in jobs.values()} == {Status.RESERVING}
        assert fake_api.calls["create"] == 0  # reserved, not sent: send=False is the default


async def test_a_bad_job_is_refused_with_the_jobs_file_error_and_nothing_is_reserved(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    async with _connect(db_url, clock, fake_api) as ledger:
        with pytest.raises(reclaim_tui.JobsFileError, match="input"):
            await ledger.submit([JOB, {"input": ""}])
        with pytest.raises(reclaim_tui.ConfigError, match="dict or a JobSpec"):
            await ledger.submit(["just a string"])  # type: ignore[list-item]
        assert await ledger.get_many([idempotency_key(ledger.job_spec(JOB))]) == {}


async def test_tick_delivers_each_result_to_the_callback_once_and_marks_it_consumed(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    seen: list[tuple[str, str]] = []

    def persist(key: str, result: reclaim_tui.Result) -> None:
        seen.append((key, result.output_text))

    async with _connect(db_url, clock, fake_api, on_result=persist) as ledger:
        keys = await ledger.submit([JOB, {"input": "second"}])
        await _until_settled(ledger, clock, keys)
        await ledger.tick()  # a later pass delivers nothing again
        job = await ledger.get(keys[0])
    assert sorted(key for key, _ in seen) == sorted(keys)
    assert job is not None and job.status == Status.CONSUMED
    assert job.output_text == dict(seen)[keys[0]] and job.output_text
    assert job.interaction_id and job.attempts == 1
    assert [e.to_status for e in job.timeline][-1] == "consumed"
    assert {e.actor for e in job.timeline} == {"api"}


async def test_a_callback_that_raises_leaves_the_job_done_and_it_is_delivered_later(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    calls: list[str] = []

    async def flaky(key: str, result: reclaim_tui.Result) -> None:
        calls.append(key)
        if len(calls) == 1:
            raise RuntimeError("disk full")

    async with _connect(db_url, clock, fake_api, on_result=flaky) as ledger:
        [key] = await ledger.submit(JOB)
        await ledger.tick()
        clock.advance(60)
        await ledger.tick()
        job = await ledger.get(key)
        assert job is not None and job.status == Status.DONE
        assert "disk full" in (job.last_error or "")
        assert job.settled and job.result is not None  # the result is stored all the same
        await _until_settled(ledger, clock, [key])
    assert calls == [key, key]


async def test_wait_returns_when_another_task_runs_the_passes(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    async with _connect(db_url, clock, fake_api, on_result=lambda k, r: None) as ledger:
        keys = await ledger.submit([JOB, {"input": "b"}, {"input": "c"}])
        passes = asyncio.create_task(_until_settled(ledger, clock, keys))
        jobs = await ledger.wait(keys, timeout=60)
        await passes
    assert sorted(jobs) == sorted(keys)
    assert all(job.settled and job.result is not None for job in jobs.values())


async def test_wait_times_out_and_names_an_unknown_key(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    async with _connect(db_url, clock, fake_api) as ledger:
        [key] = await ledger.submit(JOB)
        with pytest.raises(TimeoutError, match=key):
            await ledger.wait(key, timeout=0.01)
        with pytest.raises(reclaim_tui.OperatorError, match="no-such-key"):
            await ledger.wait([key, "no-such-key"], timeout=5)


async def test_finished_yields_each_job_as_it_settles(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    async with _connect(db_url, clock, fake_api, on_result=lambda k, r: None) as ledger:
        keys = await ledger.submit([JOB, {"input": "b"}])
        await _until_settled(ledger, clock, keys)
        got = [job.key async for job in ledger.finished(keys, timeout=5)]
    assert sorted(got) == sorted(keys)


async def test_cancel_and_retry_act_as_the_cli_does(db_url: str, clock: ManualClock) -> None:
    slow = FakeBackend(clock=clock, latency=None)  # runs until told
    async with reclaim_tui.connect(db_url, backend=slow, clock=clock) as ledger:
        [key] = await ledger.submit(JOB, send=True)
        assert (await ledger._job(key)).status == Status.SUBMITTED
        cancelled = await ledger.cancel(key)
        assert cancelled.status == Status.CANCELLED
        retried = await ledger.retry(key)
        assert retried.status == Status.RESERVING
        with pytest.raises(reclaim_tui.OperatorError):
            await ledger.cancel("missing-key")


async def test_serve_drains_when_its_task_is_cancelled(
    db_url: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    lines = io.StringIO()
    delivered: list[str] = []
    async with _connect(db_url, clock, fake_api, on_result=lambda k, r: delivered.append(k)) as (
        ledger
    ):
        keys = await ledger.submit([JOB, {"input": "b"}])
        service = asyncio.create_task(ledger.serve(interval=0.01, log_to=lines))
        # The service's clock is the manual one: move it so polls come due.
        for _ in range(200):
            if len(delivered) == len(keys):
                break
            clock.advance(60)
            await asyncio.sleep(0.01)
        service.cancel()
        with pytest.raises(asyncio.CancelledError):
            await service
    events = [json.loads(line)["event"] for line in lines.getvalue().splitlines()]
    assert sorted(delivered) == sorted(keys)
    assert events[0] == "ready" and "draining" in events and events[-1] == "stopped"


def test_the_sync_facade_runs_the_same_calls(tmp_path: Path) -> None:
    clock = ManualClock()
    fake_api = FakeBackend(clock=clock, latency=0.0)
    seen: list[str] = []
    db = str(tmp_path / "ledger.db")
    with reclaim_tui.connect_sync(
        db, backend=fake_api, clock=clock, on_result=lambda k, r: seen.append(k)
    ) as ledger:
        [key] = ledger.submit(JOB)
        for _ in range(10):
            ledger.tick()
            clock.advance(60)
        job = ledger.get(key)
        assert [j.key for j in ledger.finished([key], timeout=5)] == [key]
    assert job is not None and job.status == Status.CONSUMED and seen == [key]
    with pytest.raises(RuntimeError, match="not open"):
        ledger.get(key)


def test_settings_come_from_the_arguments_then_the_cli_s_environment() -> None:
    env = {"RECLAIM_DB": "/tmp/from-env.db", "RECLAIM_BASE_URL": "http://127.0.0.1:1"}
    assert settings_for({"db": None}, env).db == "/tmp/from-env.db"
    assert settings_for({"db": "given.db"}, env).db == "given.db"
    assert settings_for({}, env).base_url == "http://127.0.0.1:1"
    assert settings_for({"orphan_policy": "hold"}, {}).orphan_policy.value == "hold"
    assert settings_for(
        {"emulator_lookup": None}, {"RECLAIM_EMULATOR_LOOKUP": "yes"}
    ).emulator_lookup
    with pytest.raises(reclaim_tui.ConfigError, match="unknown setting"):
        settings_for({"colour": "red"}, {})
    with pytest.raises(reclaim_tui.ConfigError, match="not one of"):
        settings_for({"orphan_policy": "sometimes"}, {})
    with pytest.raises(reclaim_tui.ConfigError, match="max-attempts"):
        settings_for({"max_attempts": 0}, {})


def test_importing_the_package_does_not_load_the_api() -> None:
    code = (
        "import sys, reclaim_tui; assert 'reclaim_tui.api' not in sys.modules;"
        " reclaim_tui.connect; assert 'reclaim_tui.api' in sys.modules;"
        " print(sorted(set(reclaim_tui.__all__) - set(dir(reclaim_tui.api))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['__version__']"


async def test_a_new_ledger_beside_another_is_refused_as_the_cli_refuses_it(
    tmp_path: Path, clock: ManualClock, fake_api: FakeBackend
) -> None:
    async with _connect(str(tmp_path / "ledger.db"), clock, fake_api) as ledger:
        await ledger.submit(JOB)
    with pytest.raises(reclaim_tui.ConfigError, match="is --db mistyped"):
        async with _connect(str(tmp_path / "ledgr.db"), clock, fake_api):
            pass
    assert not (tmp_path / "ledgr.db").exists()
    async with _connect(str(tmp_path / "ledgr.db"), clock, fake_api, create_ledger=True) as new:
        assert await new.get_many([]) == {}


@pytest.mark.postgres
async def test_lanes_on_postgresql_send_and_deliver_each_job_once(
    pg_dsn: str, clock: ManualClock, fake_api: FakeBackend
) -> None:
    seen: list[str] = []
    jobs = [{"input": f"lane {i}"} for i in range(20)]
    async with _connect(pg_dsn, clock, fake_api, on_result=lambda k, _: seen.append(k), lanes=2,
                        concurrency=4) as ledger:  # fmt: skip
        keys = await ledger.submit(jobs, send=True)
        await _until_settled(ledger, clock, keys)
        (connections,) = await ledger.store.select(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND application_name = 'reclaim-tui'"
        )
    assert connections[0] == 2  # a connection a lane
    assert sorted(seen) == sorted(keys)
    assert fake_api.calls["create"] == 20


async def test_lanes_on_sqlite_are_refused_before_a_ledger_is_made(
    tmp_path: Path, clock: ManualClock, fake_api: FakeBackend
) -> None:
    db = tmp_path / "new.db"
    with pytest.raises(reclaim_tui.ConfigError, match="needs a PostgreSQL ledger"):
        async with _connect(str(db), clock, fake_api, lanes=2):
            pass
    assert not db.exists()
