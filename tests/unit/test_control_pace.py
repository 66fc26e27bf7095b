"""A service's own state and pace over its control socket (issue 25, D5):
`ServiceStatus` says up / paused / draining, its pass interval, its calls in
flight and its last pass; `SetPace` pauses, resumes, sets the interval and
the concurrency, refusing a bad value with a clear error and changing nothing."""

from __future__ import annotations

import asyncio
import io
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import ConfigError
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.runner.control_server import ControlServer
from reclaim_tui.runner.service import ServiceLoop


@dataclass
class Running:
    engine: Engine
    fake: FakeBackend
    loop: ServiceLoop
    path: Path
    task: asyncio.Task[int]


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[Running]:
    path = Path(f"/tmp/rt-pace-{os.getpid()}-{id(tmp_path)}.sock")
    ledger = await open_ledger(str(tmp_path / "ledger.db"))
    fake = FakeBackend()
    config = EngineConfig(first_poll=0.0, max_attempts=1, concurrency=4)
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=config)
    loop = ServiceLoop(engine, out=io.StringIO(), min_sleep=0.01, max_sleep=0.05)
    server = ControlServer(path, engine, loop, Settings(db=str(tmp_path / "ledger.db")))
    await server.start()
    task = asyncio.create_task(loop.run())
    try:
        yield Running(engine, fake, loop, path, task)
    finally:
        loop.stopping = True
        loop.wake.set()
        await asyncio.wait_for(task, 60)
        await server.stop()
        await ledger.close()


async def _ask(path: Path, message: dict[str, Any]) -> dict[str, Any]:
    """One line to the control socket as any client may write it; its reply."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    try:
        json.loads(await reader.readline())  # Started
        writer.write(json.dumps({"id": 1, **message}).encode() + b"\n")
        await writer.drain()
        return dict(json.loads(await asyncio.wait_for(reader.readline(), 30)))
    finally:
        writer.close()


async def _passes_after(loop: ServiceLoop, more_than: int) -> int:
    async with asyncio.timeout(60):
        while loop.passes <= more_than:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    return loop.passes


async def test_status_is_the_services_own_state_and_last_pass(service: Running) -> None:
    await service.engine.submit([JobSpec(input="one", model="m")], send=False)
    await _passes_after(service.loop, 2)
    reply = await _ask(service.path, {"type": "ServiceStatus"})
    assert reply["type"] == "ServiceState", reply
    assert reply["state"] == "up"
    assert reply["interval"] == service.loop.max_sleep == 0.05
    assert reply["concurrency"] == 4
    assert reply["pid"] == os.getpid()
    assert reply["passes"] >= 2 and reply["last_pass_at"] is not None
    assert reply["last_summary"]
    host = AttachedHost(service.path)
    await host.start()
    try:
        async with asyncio.timeout(60):
            while (state := await host.status()).totals.get("consumed", 0) < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        assert state.state == "up" and state.passes >= reply["passes"]
        service.loop.stopping = True  # a drain: the pass in flight ends, no other starts
        assert (await host.status()).state == "draining"
    finally:
        await host.stop()


async def test_pause_stops_the_services_passes_and_resume_restarts_them(
    service: Running,
) -> None:
    host = AttachedHost(service.path)
    await host.start()
    try:
        await _passes_after(service.loop, 1)
        state = await host.set_pace(paused=True)
        assert state.state == "paused"
        await asyncio.sleep(0.1)  # a pass in flight may still end
        settled = service.loop.passes
        # With a 0.05 s interval, this many sleeps would be that many passes.
        for _ in range(10):
            service.loop.wake.set()
            await asyncio.sleep(0.05)
        assert service.loop.passes == settled, "a paused service starts no pass"
        assert (await host.status()).state == "paused"
        assert (await host.set_pace(paused=False)).state == "up"
        await _passes_after(service.loop, settled)
    finally:
        await host.stop()
    said = [json.loads(line) for line in service.loop.out.getvalue().splitlines()]  # type: ignore[attr-defined]
    assert [line.get("paused") for line in said if line["event"] == "pace"] == [True, False]


async def test_interval_and_concurrency_are_set_on_the_service(service: Running) -> None:
    host = AttachedHost(service.path)
    await host.start()
    try:
        state = await host.set_pace(interval=7.5, concurrency=3)
        assert (state.interval, state.concurrency) == (7.5, 3)
        assert service.loop.max_sleep == 7.5
        assert service.engine.config.concurrency == 3
        assert service.engine.limit.current == 3, "the service's passes use the new limit"
        state = await host.status()
        assert (state.interval, state.concurrency, state.max_concurrency) == (7.5, 3, 3)
    finally:
        await host.stop()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"interval": 0}, "interval 0: must be more than 0"),
        ({"interval": -2}, "interval -2: must be more than 0"),
        ({"interval": 86401}, "at most 86400 seconds"),
        ({"interval": "fast"}, "interval must be a number of seconds, not 'fast'"),
        ({"concurrency": 0}, "concurrency 0: must be between 1 and 1024"),
        ({"concurrency": 5000}, "concurrency 5000: must be between 1 and 1024"),
        ({"concurrency": 2.5}, "concurrency must be a whole number, not 2.5"),
        ({"concurrency": True}, "concurrency must be a whole number, not True"),
        ({"paused": "yes"}, "paused must be true or false, not 'yes'"),
        ({"paused": True, "concurrency": 0}, "concurrency 0"),
    ],
)
async def test_a_bad_value_is_refused_and_changes_nothing(
    service: Running, change: dict[str, Any], said: str
) -> None:
    reply = await _ask(service.path, {"type": "SetPace", **change})
    assert reply["type"] == "Failed" and reply["kind"] == "ConfigError", reply
    assert said in reply["error"]
    state = await _ask(service.path, {"type": "ServiceStatus"})
    assert (state["state"], state["interval"], state["concurrency"]) == ("up", 0.05, 4)
    host = AttachedHost(service.path)
    await host.start()
    try:
        with pytest.raises(ConfigError, match="must be"):
            await host.set_pace(concurrency=0)
    finally:
        await host.stop()
