"""A console attached to a running service (issue 14): `reclaim-tui run
--control PATH` serves the console's commands on its own engine; the
console runs no loop and no engine of its own."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import stat
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.engine.engine import Engine, EngineConfig
from reclaim_tui.core.fakes import FakeBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.errors import ConfigError, ReclaimError
from reclaim_tui.runner.commands import Retry, RowsOutcome
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.runner.control_server import ControlServer
from reclaim_tui.runner.service import ServiceLoop

CONFIG = EngineConfig(first_poll=0.0, max_attempts=1)


@dataclass
class Running:
    ledger: Ledger
    engine: Engine
    fake: FakeBackend
    loop: ServiceLoop
    server: ControlServer
    path: Path
    task: asyncio.Task[int]


@pytest.fixture
async def service(tmp_path: Path, db_url: str) -> AsyncIterator[Running]:
    # A short path: a Unix socket's name is limited to ~107 bytes.
    path = Path(f"/tmp/rt-ctl-{os.getpid()}-{id(tmp_path)}.sock")
    ledger = await open_ledger(db_url)
    fake = FakeBackend()
    engine = Engine(ledger, fake, DirectorySink(tmp_path / "out"), config=CONFIG)
    loop = ServiceLoop(engine, out=io.StringIO(), min_sleep=0.01, max_sleep=0.05)
    server = ControlServer(path, engine, loop, Settings(db=db_url))
    await server.start()
    task = asyncio.create_task(loop.run())
    try:
        yield Running(ledger, engine, fake, loop, server, path, task)
    finally:
        loop.stopping = True
        loop.wake.set()
        await asyncio.wait_for(task, 60)
        await server.stop()
        await ledger.close()


async def _no_pass_for_30_seconds(service: Running) -> None:
    """The loop's next wait is 30 s: the pass that ends here is the last for a while."""
    service.loop.max_sleep = 30.0
    await asyncio.wait_for(service.loop.next_pass(), 60)


async def _until_a_console_waits(service: Running) -> None:
    """Until an attached console's tick waits on the service for its next pass."""
    async with asyncio.timeout(30):
        while not service.loop._waiters:  # noqa: ASYNC110 — the request arrives
            await asyncio.sleep(0.01)


async def test_an_attached_tick_returns_the_services_own_next_pass(service: Running) -> None:
    host = AttachedHost(service.path)
    await host.start()
    try:
        assert host.owner == service.engine.owner
        seen: list[dict[str, int]] = []
        said = service.loop._report
        service.loop._report = lambda r: (seen.append(dict(r.counts)), said(r))[1]  # type: ignore[method-assign]
        await service.engine.submit([JobSpec(input="attached", model="m")], send=False)
        reports = [await asyncio.wait_for(host.tick(), 60) for _ in range(3)]
        for report in reports:
            assert dict(report.counts) in seen, "each report is of a pass the service ran"
        async with asyncio.timeout(60):
            while not any(r.get("consumed") for r in seen):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        # Only the service's engine ever called the API: the console has none.
        assert service.fake.calls["create"] == 1
    finally:
        await host.stop()


async def test_operator_commands_run_on_the_service_as_the_console(service: Running) -> None:
    spec = JobSpec(input="fails once", model="m")
    idem = idempotency_key(spec)
    from reclaim_tui.errors import NotCreatedError

    service.fake.create_faults = [NotCreatedError("bad request", 400, retryable=False)]
    await service.engine.submit([spec], send=False)
    service.loop.wake.set()
    async with asyncio.timeout(60):
        while (row := await service.ledger.get(idem)) is None or row.status != "failed":  # noqa: ASYNC110
            await asyncio.sleep(0.02)
    host = AttachedHost(service.path)
    await host.start()
    try:
        outcome = await host.rows(Retry((idem,)))
        assert outcome == RowsOutcome(1, [])
    finally:
        await host.stop()
    events = await service.ledger.events(idem)
    retried = [e for e in events if e.from_status == "failed"]
    assert retried and retried[0].actor == "console"
    service_steps = {e.actor for e in events if e.from_status != "failed"}
    assert "console" not in service_steps, "the service's own passes are not the console's"


async def test_a_stopping_service_fails_the_tick_in_flight_and_says_so(service: Running) -> None:
    host = AttachedHost(service.path)
    await host.start()
    try:
        await _no_pass_for_30_seconds(service)  # none comes before the stop
        waiting = asyncio.create_task(host.tick())
        await _until_a_console_waits(service)
        service.loop.signal(signal.SIGTERM)
        with pytest.raises(ReclaimError, match="stop"):
            await asyncio.wait_for(waiting, 60)
    finally:
        await host.stop()


async def test_the_socket_is_private_and_a_second_service_is_refused(service: Running) -> None:
    assert stat.S_IMODE(service.path.stat().st_mode) == 0o600
    other = ControlServer(service.path, service.engine, service.loop, Settings(db="x.db"))
    with pytest.raises(ConfigError, match="another service is listening"):
        await other.start()
    assert service.path.exists(), "the live service's socket is left alone"


async def test_a_dead_services_socket_is_replaced_and_other_files_refused(tmp_path: Path) -> None:
    path = Path(f"/tmp/rt-dead-{os.getpid()}.sock")
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    dead.close()  # a socket file nobody listens on: what a SIGKILLed service leaves
    try:
        ledger = await open_ledger(tmp_path / "l.db")
        engine = Engine(ledger, FakeBackend(), DirectorySink(tmp_path / "out"), config=CONFIG)
        loop = ServiceLoop(engine, out=io.StringIO())
        server = ControlServer(path, engine, loop, Settings(db=str(tmp_path / "l.db")))
        await server.start()
        await server.stop()
        assert not path.exists()
        plain = tmp_path / "not-a-socket"
        plain.write_text("keep me")
        with pytest.raises(ConfigError, match="not a socket"):
            await ControlServer(plain, engine, loop, Settings(db="x")).start()
        assert plain.read_text() == "keep me"
        await ledger.close()
    finally:
        path.unlink(missing_ok=True)


async def test_attaching_where_no_service_runs_says_how_to_start_one(tmp_path: Path) -> None:
    host = AttachedHost(tmp_path / "none.sock")
    with pytest.raises(ConfigError, match="reclaim-tui run --control"):
        await host.start()


async def test_the_console_reconnects_once_the_service_is_back(
    service: Running, tmp_path: Path
) -> None:
    host = AttachedHost(service.path)
    await host.start()
    try:
        await service.server.stop()  # the service restarts its control socket
        async with asyncio.timeout(30):
            while host.alive:  # noqa: ASYNC110 — the reader sees the close
                await asyncio.sleep(0.01)
        service.server = ControlServer(
            service.path, service.engine, service.loop, service.server.settings
        )
        await service.server.start()
        report = await asyncio.wait_for(host.tick(), 60)
        assert report is not None
    finally:
        await host.stop()


async def test_prune_counts_its_age_from_the_instant_the_operator_confirmed(
    engine: Engine, clock: ManualClock
) -> None:
    from reclaim_tui.runner.commands import Prune, Pruned
    from reclaim_tui.runner.execute import execute

    await engine.ledger.insert_jobs([("late-row", '{"input": "x", "model": "m"}', "m")], "test")
    async with engine.ledger.write() as db:
        await db.execute(
            Sql(lambda d: f"UPDATE jobs SET status = 'consumed', state_since = {d.p}"),
            [clock.now()],
        )
    confirmed_at = clock.now()  # the count said: nothing older than 60 s
    clock.advance(120)  # the dialog stayed open; the row is now past the age
    reply = await execute(engine, Prune(("consumed",), 60.0, None, at=confirmed_at))
    assert isinstance(reply, Pruned) and reply.report["pruned"] == 0
    reply = await execute(engine, Prune(("consumed",), 60.0, None))
    assert isinstance(reply, Pruned) and reply.report["pruned"] == 1


async def _fake_service(
    path: Path, first: bytes | None, then: bytes = b""
) -> asyncio.AbstractServer:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if first is not None:
            writer.write(first)
        await reader.readline()
        writer.write(then)
        await writer.drain()
        await asyncio.sleep(30)

    return await asyncio.start_unix_server(answer, path=str(path))


async def test_a_silent_or_foreign_peer_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reclaim_tui.runner.control as control

    monkeypatch.setattr(control, "HELLO_TIMEOUT", 0.5)
    path = Path(f"/tmp/rt-peer-{os.getpid()}.sock")
    for first, said in ((None, "no answer"), (b"SSH-2.0-OpenSSH_9\r\n", "not a reclaim-tui")):
        server = await _fake_service(path, first)
        try:
            with pytest.raises(ReclaimError, match=said):
                await asyncio.wait_for(AttachedHost(path).start(), 30)
        finally:
            server.close()
            path.unlink(missing_ok=True)


async def test_a_reply_the_console_cannot_read_fails_the_command(tmp_path: Path) -> None:
    from reclaim_tui.runner.commands import Started, encode

    path = Path(f"/tmp/rt-odd-{os.getpid()}.sock")
    hello = encode(Started("svc|1|x", Settings(db="x.db").to_wire()), 0)
    server = await _fake_service(path, hello, b'{"id": 1, "type": "FromTheFuture"}\n')
    host = AttachedHost(path)
    try:
        await host.start()
        with pytest.raises(ReclaimError, match="cannot read"):
            await asyncio.wait_for(host.rows(Retry(("k",))), 30)
    finally:
        await host.stop()
        server.close()
        path.unlink(missing_ok=True)


async def test_stopping_the_control_server_ends_the_commands_it_runs(service: Running) -> None:
    host = AttachedHost(service.path)
    await host.start()
    await _no_pass_for_30_seconds(service)
    waiting = asyncio.create_task(host.tick())  # waits for a pass that will not come
    await _until_a_console_waits(service)
    assert service.server._tasks
    await asyncio.wait_for(service.server.stop(), 30)
    assert not service.server._tasks, "no session outlives stop()"
    with pytest.raises(ReclaimError):
        await asyncio.wait_for(waiting, 30)
    await host.stop()


async def test_the_service_tells_an_attaching_console_absolute_paths(service: Running) -> None:
    from reclaim_tui.runner.control import service_settings

    theirs = await service_settings(service.path)
    assert Path(str(theirs["out"])).is_absolute()
    db = str(theirs["db"])
    assert db.startswith("postgresql://") or Path(db).is_absolute()


async def test_a_line_that_is_no_command_is_said_once_in_the_service_log(
    service: Running,
) -> None:
    reader, writer = await asyncio.open_unix_connection(str(service.path))
    await reader.readline()  # Started
    writer.write(b"this is not json\n")
    await writer.drain()
    assert await reader.readline() == b"", "the session ends"
    writer.close()
    out = service.loop.out
    assert isinstance(out, io.StringIO)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    refused = [line for line in lines if line["event"] == "control_refused"]
    assert len(refused) == 1 and "JSONDecodeError" in str(refused[0]["error"])


def _refusals(service: Running) -> list[dict[str, object]]:
    out = service.loop.out
    assert isinstance(out, io.StringIO)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return [line for line in lines if line["event"] == "control_refused"]


async def test_consoles_past_the_cap_are_told_and_hung_up_on(service: Running) -> None:
    # Issue 22, point 4: any number of clients could attach, each may hold a
    # line of up to 64 MiB (~490 MB grown in the trial).
    service.server.max_consoles = 2
    hosts = [AttachedHost(service.path) for _ in range(2)]
    for host in hosts:
        await host.start()
    try:
        with pytest.raises(ReclaimError, match="consoles already"):
            await AttachedHost(service.path).start()
        for _ in range(10):
            reader, writer = await asyncio.open_unix_connection(str(service.path))
            assert b"consoles already" in await asyncio.wait_for(reader.readline(), 60)
            assert await asyncio.wait_for(reader.readline(), 60) == b"", "hung up on"
            writer.close()
        refused = [r for r in _refusals(service) if r["cause"] == "consoles"]
        assert len(refused) == 1, "one line per cause per interval"
        assert service.server.refused["consoles"] == 11
        assert (await hosts[0].tick()) is not None, "the attached ones are served"
    finally:
        for host in hosts:
            await host.stop()


async def test_a_line_past_the_limit_ends_the_session_and_is_said(service: Running) -> None:
    reader, writer = await asyncio.open_unix_connection(str(service.path))
    await reader.readline()  # Started
    writer.write(b'{"id": 1, "type": "Tick", "pad": "' + b"x" * (9 * 1024 * 1024) + b'"}\n')
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    try:
        rest = await asyncio.wait_for(reader.read(), 60)
    except ConnectionResetError:  # closed with the rest of the line unread
        rest = b""
    assert rest == b"", "the session ends"
    writer.close()
    refused = _refusals(service)
    assert len(refused) == 1 and "longer than" in str(refused[0]["error"])


async def test_an_attached_submit_bigger_than_a_line_goes_in_parts(service: Running) -> None:
    jobs = [JobSpec(input=f"{n} " + "y" * 700_000, model="m") for n in range(16)]  # ~11 MB
    host = AttachedHost(service.path)
    await host.start()
    try:
        report = await asyncio.wait_for(host.submit(jobs, send=False), 120)
    finally:
        await host.stop()
    assert report.counts["inserted"] == 16
    assert _refusals(service) == []
