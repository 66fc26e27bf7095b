"""Factories the CLI and the tests share: `make_app`, `run_console`, `run_demo`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.engine import Engine
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.sinks import Sink, load_sink
from reclaim_tui.services import make_backend
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.context import ConsoleConfig
from reclaim_tui.tui.engine_host import EngineSetup

__all__ = ["engine_setup", "make_app", "run_console", "run_demo"]

ACTOR = "console"


def engine_setup(settings: Settings, backend: Backend, sink: Sink, clock: Clock) -> EngineSetup:
    """Opens the writable ledger and the engine on the engine host's loop."""

    async def setup() -> tuple[Engine, Callable[[], Awaitable[None]]]:
        ledger = await Ledger.open(settings.db, clock=clock, busy_timeout=settings.busy_timeout)
        engine = Engine(ledger, backend, sink, config=settings.engine_config(ACTOR))

        async def teardown() -> None:
            await ledger.close()
            await backend.aclose()

        return engine, teardown

    return setup


def make_app(
    settings: Settings,
    *,
    readonly: bool = False,
    interval: float = 2.0,
    backend: Backend | None = None,
    clock: Clock | None = None,
    paused: bool = False,
) -> ReclaimApp:
    """The console on `settings.db`. Without `backend` the settings' Gemini
    backend is built here, so a missing key fails before the screen opens.
    `readonly` builds no engine at all: nothing is written, nothing called."""
    clock = clock or SystemClock()
    setup = None
    if not readonly:
        sink = load_sink(settings.sink, settings.out)
        setup = engine_setup(settings, backend or make_backend(settings), sink, clock)
    config = ConsoleConfig(
        settings=settings,
        engine_setup=setup,
        readonly=readonly,
        interval=interval,
        paused=paused,
        clock=clock,
        models=[settings.model],
        subtitle=f"{settings.db}{' · read-only' if readonly else ''}",
    )
    return ReclaimApp(config)


async def _preflight(settings: Settings, readonly: bool) -> None:
    """Open the ledger once so a corrupt, newer or missing ledger is an error
    message and an exit code, not a console that dies on start."""
    ledger = await Ledger.open(
        settings.db, busy_timeout=settings.busy_timeout, readonly=readonly, create=not readonly
    )
    await ledger.close()


def run_console(settings: Settings, *, readonly: bool = False, interval: float = 2.0) -> None:
    app = make_app(settings, readonly=readonly, interval=interval)
    asyncio.run(_preflight(settings, readonly))
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)


def run_demo(db_path: str | None = None, jobs: int = 36, seed: int = 7) -> None:
    from reclaim_tui.tui.demo import make_demo_app

    app = make_demo_app(db_path=db_path, jobs=jobs, seed=seed)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
