"""Factories the CLI and the tests share: `make_app`, `run_console`, `run_demo`."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend
from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.gemini import resolve_api_key
from reclaim_tui.core.ledger.opening import ledger_file
from reclaim_tui.core.ledger.sqlite import new_ledger
from reclaim_tui.core.ledger.urls import shown_db
from reclaim_tui.core.sinks import load_sink
from reclaim_tui.errors import ConfigError
from reclaim_tui.runner.commands import ACTOR
from reclaim_tui.runner.control import AttachedHost
from reclaim_tui.runner.host import EngineHost, ThreadHost
from reclaim_tui.runner.process import ProcessHost
from reclaim_tui.tui.app import ReclaimApp
from reclaim_tui.tui.context import ConsoleConfig

__all__ = ["make_app", "make_host", "run_console", "run_demo"]


def make_host(settings: Settings, backend: Backend | None, clock: Clock) -> EngineHost:
    """A worker process for the settings' Gemini backend; a thread for an
    injected one (a test's fake lives in this process and cannot cross)."""
    sink = load_sink(settings.sink, settings.out)  # a bad --sink fails here, not in the child
    if backend is not None:
        opener = functools.partial(
            open_engine, settings, actor=ACTOR, backend=backend, sink=sink, clock=clock
        )
        return ThreadHost(opener)
    if not resolve_api_key(settings.api_key) and settings.base_url is None:
        # The child would say the same, but only after the screen opened.
        raise ConfigError(
            "no Gemini API key: pass --api-key or set GEMINI_API_KEY (or GOOGLE_API_KEY);"
            " to watch the ledger without acting on it, add --readonly (no key needed)"
        )
    return ProcessHost(settings)


def make_app(
    settings: Settings,
    *,
    readonly: bool = False,
    interval: float = 2.0,
    backend: Backend | None = None,
    clock: Clock | None = None,
    paused: bool = False,
    attach: str | None = None,
    interval_given: bool = False,
) -> ReclaimApp:
    """The console on `settings.db`. Without `backend` the engine runs in a
    worker process on the settings' Gemini backend (a missing key fails here,
    before the screen opens); `clock` then only drives what the console shows.
    `readonly` builds no engine at all: nothing is written, nothing called.
    `attach` (a service's --control socket) builds none either: the
    service's engine runs every command, and its passes are the loop's."""
    clock = clock or SystemClock()
    host: EngineHost | None = None
    if attach is not None:
        host = AttachedHost(attach)
    elif not readonly:
        host = make_host(settings, backend, clock)
    mode = " · read-only" if readonly else f" · attached to {attach}" if attach else ""
    config = ConsoleConfig(
        settings=settings,
        host=host,
        readonly=readonly,
        interval=interval,
        interval_given=interval_given,
        paused=paused,
        clock=clock,
        models=[settings.model],
        subtitle=f"{shown_db(settings.db)}{mode}",
        attach=attach,
        host_factory=(
            None if host is None or attach is not None else _host_factory(backend, clock)
        ),
    )
    return ReclaimApp(config)


def _host_factory(backend: Backend | None, clock: Clock) -> Callable[[Settings], EngineHost]:
    def build(settings: Settings) -> EngineHost:
        return make_host(settings, backend, clock)

    return build


async def _preflight(settings: Settings, readonly: bool) -> str | None:
    """Open the ledger once so a corrupt, newer or missing ledger is an error
    message and an exit code, not a console that dies on start. Returns the
    console's first notice when this started a new ledger (else None)."""
    fresh = not readonly and ledger_file(settings.db) is not None
    fresh = fresh and new_ledger.would_create(settings.db)
    async with open_ledger(settings, readonly=readonly, create=not readonly):
        pass
    return new_ledger.created_note(shown_db(settings.db)) if fresh else None


def run_console(
    settings: Settings,
    *,
    readonly: bool = False,
    interval: float = 2.0,
    attach: str | None = None,
    interval_given: bool = False,
) -> None:
    app = make_app(
        settings, readonly=readonly, interval=interval, attach=attach, interval_given=interval_given
    )
    # Attached, the service owns the ledger: it must exist, never be created here.
    app.config.created_note = asyncio.run(_preflight(settings, readonly or attach is not None))
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)


def run_demo(db_path: str | None = None, jobs: int = 36, seed: int = 7) -> None:
    from reclaim_tui.tui.demo import make_demo_app

    app = make_demo_app(db_path=db_path, jobs=jobs, seed=seed)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
