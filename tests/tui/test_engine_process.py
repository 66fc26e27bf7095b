"""The engine worker process (ProcessHost + runner/worker.py) against the in-process emulator.

The console for a real backend runs its engine in a child: these tests drive
that child through the console's own keys and through the host's interface,
and check the ledger, the process table and the child's lifetime.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine, OrphanPolicy
from reclaim_tui.core.gemini import GeminiBackend
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec, Status
from reclaim_tui.core.sinks import DirectorySink
from reclaim_tui.emulator import EmulatorConfig, EmulatorServer
from reclaim_tui.errors import LedgerError
from reclaim_tui.runner.commands import Retry
from reclaim_tui.runner.process import ProcessHost
from reclaim_tui.runner.worker import ENGINE_NICE
from reclaim_tui.tui.launch import make_app
from reclaim_tui.tui.screens.confirm import ConfirmScreen

from .pilot_helpers import SIZE, notified, press, select, settle, until

KEY = "sekrit-test-key-4f2a"
FINISHED = JobSpec("Summarise the finished report", "gemini-flash-latest")
RUNNING = JobSpec("Summarise the report still running", "gemini-flash-latest")


@pytest.fixture
async def emulator() -> AsyncIterator[EmulatorServer]:
    # latency=None: interactions run until the test finishes them.
    async with EmulatorServer(EmulatorConfig(api_key=KEY, latency=None)) as emu:
        yield emu


def settings_for(tmp_path: Path, emu: EmulatorServer, **changes: object) -> Settings:
    base = Settings(
        db=str(tmp_path / "ledger.db"),
        out=str(tmp_path / "articles"),
        base_url=emu.base_url,
        api_key=KEY,
        emulator_lookup=True,
        orphan_policy=OrphanPolicy.HOLD,
        first_poll=0.0,
        concurrency=3,
        request_timeout=7.0,
        busy_timeout=3.0,
        lease_seconds=45.0,
    )
    return base.with_(**changes)


async def submitted_on_emulator(settings: Settings, emu: EmulatorServer) -> dict[str, str]:
    """Two jobs created on the emulator through the real SDK; FINISHED completes."""
    backend = GeminiBackend(api_key=KEY, base_url=emu.base_url)
    ledger = await open_ledger(settings.db)
    config = settings.engine_config()  # first_poll=0: due at once
    engine = Engine(ledger, backend, DirectorySink(settings.out), config=config, owner="seed|1|x")
    report = await engine.submit([FINISHED, RUNNING])
    assert report.counts["sent"] == 2, report.summary()
    handles = {r.idem: r.handle or "" async for r in ledger.iter_rows()}
    await ledger.close()
    await backend.aclose()
    done = emu.store.get(handles[idempotency_key(FINISHED)])
    assert done is not None
    emu.store.finish(done, "completed", "the summary", None)
    return handles


async def row(settings: Settings, spec: JobSpec) -> tuple[Status, int]:
    ledger = await open_ledger(settings.db)
    try:
        got = await ledger.get(idempotency_key(spec))
        assert got is not None
        return got.status, len(await ledger.events(got.idem))
    finally:
        await ledger.close()


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        # Not there, or reaped between the open and the read (ESRCH: CI saw it once).
        return True


async def test_console_keys_drive_the_worker_process(tmp_path: Path, emulator) -> None:  # type: ignore[no-untyped-def]
    settings = settings_for(tmp_path, emulator)
    handles = await submitted_on_emulator(settings, emulator)
    app = make_app(settings, paused=True, interval=3600.0)
    app.animation_level = "none"
    app.NOTIFICATION_TIMEOUT = 3600.0  # type: ignore[misc]
    host = app.host
    assert isinstance(host, ProcessHost)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert host.pid is not None and host.pid != os.getpid()

        # P: the loop's tick, in the child, consumes the finished job.
        await press(pilot, "P")
        assert await until(pilot, lambda: _is(settings, FINISHED, Status.CONSUMED))
        await press(pilot, "P")
        assert (tmp_path / "articles" / f"{idempotency_key(FINISHED)}.md").exists()

        # c: the cancel lands in the ledger and at the API.
        await select(pilot, idempotency_key(RUNNING))
        await press(pilot, "c")
        assert isinstance(app.screen, ConfirmScreen)
        await press(pilot, "y")
        assert await until(pilot, lambda: _is(settings, RUNNING, Status.CANCELLED))
        remote = emulator.store.get(handles[idempotency_key(RUNNING)])
        assert await until(pilot, lambda: remote is not None and remote.status == "cancelled")

        # r on a consumed row: refused before it reaches the child (the
        # engine's own refusal crossing the process is tested below).
        before = await row(settings, FINISHED)
        await select(pilot, idempotency_key(FINISHED))
        await press(pilot, "r")
        assert await until(pilot, notified(pilot, "is consumed; retry applies to"))
        assert await row(settings, FINISHED) == before
        pid = host.pid
    assert await _until_gone(pid), "the worker outlived the console"


async def _is(settings: Settings, spec: JobSpec, status: Status) -> bool:
    return (await row(settings, spec))[0] == status


async def _until_gone(pid: int, limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        await asyncio.sleep(0.05)
    return gone(pid)


async def test_the_host_passes_every_setting_and_keeps_the_key_off_argv(
    tmp_path: Path, emulator: EmulatorServer
) -> None:
    settings = settings_for(tmp_path, emulator, sink="tests.helpers.sinks:record")
    host = ProcessHost(settings)
    await host.start()
    try:
        assert host.pid is not None
        assert host.worker_settings == settings.to_wire()
        assert "api_key" not in host.worker_settings
        with open(f"/proc/{host.pid}/cmdline", "rb") as f:
            argv = f.read()
        assert KEY.encode() not in argv and b"reclaim_tui.runner.worker" in argv
        with open(f"/proc/{host.pid}/environ", "rb") as f:
            assert f"GEMINI_API_KEY={KEY}".encode() in f.read().split(b"\0")
        # The engine yields a busy core to the operator's keys (worker.ENGINE_NICE).
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, host.pid) == min(mine + ENGINE_NICE, 19)
        report = await host.tick()  # an empty ledger: nothing to do, but a real pass
        assert report.summary() == "idle"
        outcome = await host.rows(Retry(("nope",)))
        assert outcome.applied == 0 and outcome.refused == ["no job with key nope"]
    finally:
        await host.stop()
    assert gone(host.pid)


async def test_a_worker_that_dies_is_restarted(tmp_path: Path, emulator: EmulatorServer) -> None:
    """Issue 10: a console whose worker process died stayed without an engine."""
    host = ProcessHost(settings_for(tmp_path, emulator))
    await host.start()
    try:
        first = host.pid
        assert first is not None and (await host.tick()).summary() == "idle"
        os.kill(first, 9)  # the OOM killer, say
        assert await _until_gone(first)
        for _ in range(600):  # until the host has seen the exit (bounded, not timed)
            if not host.alive:
                break
            await asyncio.sleep(0.05)
        assert not host.alive
        report = await host.tick()  # goes to a new worker
        assert report.summary() == "idle"
        assert host.pid not in (None, first) and host.restarts == 1
        assert host.last_death is not None and "exited (code -9)" in host.last_death
    finally:
        await host.stop()


def test_settings_survive_the_wire() -> None:
    settings = Settings(db="x.db", api_key="k", orphan_policy=OrphanPolicy.HOLD, sink="m:f")
    back = Settings.from_wire(settings.to_wire())
    assert back == settings.with_(api_key=None)


async def test_an_unusable_ledger_fails_start_with_its_own_error(
    tmp_path: Path, emulator: EmulatorServer
) -> None:
    bad = tmp_path / "not-a-ledger.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    host = ProcessHost(settings_for(tmp_path, emulator, db=str(bad)))
    with pytest.raises(LedgerError, match="not a usable SQLite ledger"):
        await host.start()
    assert host.pid is not None and await _until_gone(host.pid)


def test_the_worker_dies_with_a_killed_console(tmp_path: Path) -> None:
    """SIGKILL the console's process: its engine worker must not linger."""
    script = textwrap.dedent(
        f"""
        import asyncio
        from reclaim_tui.config import Settings
        from reclaim_tui.runner.process import ProcessHost

        async def main():
            host = ProcessHost(Settings(db={str(tmp_path / "l.db")!r}, base_url="http://127.0.0.1:9"))
            await host.start()
            print(host.pid, flush=True)
            await asyncio.sleep(600)

        asyncio.run(main())
        """
    )
    console = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert console.stdout is not None
        worker = int(console.stdout.readline())
        assert not gone(worker)
    finally:
        console.kill()
        console.wait()
    assert asyncio.run(_until_gone(worker)), "orphaned engine worker"


def test_the_worker_never_imports_textual() -> None:
    code = (
        "import sys, reclaim_tui.runner.worker, reclaim_tui.demo.world;"
        "assert 'textual' not in sys.modules, 'the worker imported textual'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_runner_never_imports_the_console() -> None:
    code = (
        "import sys, reclaim_tui.runner.process, reclaim_tui.runner.worker;"
        "assert not [m for m in sys.modules if m.startswith('reclaim_tui.tui')], 'it imported tui'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
