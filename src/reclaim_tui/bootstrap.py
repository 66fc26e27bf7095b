"""The one place that wires a ledger, a backend and a sink into an Engine.

Every client builds its engine here: the CLI, the console (in its engine
worker process, or on a thread for an injected backend), the demo (with its
own backend and sink) and the benchmarks.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend, LabelFinder
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import opening
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.sqlite import new_ledger
from reclaim_tui.core.models import Actor

if TYPE_CHECKING:
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.core.sinks import Sink

__all__ = ["lane_ledgers", "make_backend", "open_engine", "open_ledger", "open_with_lanes"]


def make_backend(settings: Settings) -> Backend:
    """The Gemini backend for these settings; ConfigError if the real API has no key."""
    # Imported here: the SDK is the slowest import of all, and a read-only
    # command never needs it.
    from reclaim_tui.core.gemini import GeminiBackend, resolve_api_key

    finder: LabelFinder | None = None
    if settings.emulator_lookup and settings.base_url:
        from reclaim_tui.core.gemini.finder import EmulatorFinder

        finder = EmulatorFinder(settings.base_url, settings.request_timeout)
    return GeminiBackend(
        api_key=resolve_api_key(settings.api_key),
        base_url=settings.base_url,
        request_timeout=settings.request_timeout,
        finder=finder,
        webhook_url=settings.webhook_url,
        transport=settings.transport,
    )


@asynccontextmanager
async def open_ledger(
    settings: Settings, *, readonly: bool = False, create: bool = True, clock: Clock | None = None
) -> AsyncIterator[Ledger]:
    """The ledger at `settings.db`, closed on exit; a LedgerError if unusable.

    A new SQLite ledger is said on stderr, and refused beside another ledger
    of the same folder unless `settings.create_ledger` (core/ledger/sqlite/new_ledger.py)."""
    fresh = create and not readonly and opening.ledger_file(settings.db) is not None
    fresh = fresh and new_ledger.would_create(settings.db)
    if fresh and not settings.create_ledger:
        new_ledger.refuse_beside_others(settings.db)
    ledger = await opening.open_ledger(
        settings.db,
        busy_timeout=settings.busy_timeout,
        readonly=readonly,
        create=create,
        clock=clock,
    )
    if fresh:
        print(f"reclaim-tui: {new_ledger.created_note(settings.db)}", file=sys.stderr)
    try:
        yield ledger
    finally:
        await ledger.close()


@asynccontextmanager
async def open_engine(
    settings: Settings,
    *,
    actor: Actor,
    backend: Backend | None = None,
    sink: Sink | None = None,
    clock: Clock | None = None,
    create: bool = True,
) -> AsyncIterator[Engine]:
    """An engine on the writable ledger; the ledger and the backend (given or
    built) are closed on exit. `sink` defaults to the settings' sink;
    `create=False` refuses to start a new ledger (an operator's command on a
    job needs the ledger that has it)."""
    # Imported here: the commands that only read the ledger (status, show, export)
    # import neither the engine nor the sinks.
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.core.sinks import DirectorySink, load_sink

    # Backend first: a missing API key fails before the sink or the ledger is touched.
    if backend is None:
        backend = make_backend(settings)
    try:
        if sink is None:
            sink = load_sink(settings.sink, settings.out)
        if isinstance(sink, DirectorySink):
            sink.check()  # a temp folder that is a link is refused before any pass
        async with open_ledger(settings, clock=clock, create=create) as ledger:
            async with lane_ledgers(settings, clock) as lanes:
                config = settings.engine_config(actor)
                yield Engine(ledger, backend, sink, config=config, lane_ledgers=lanes)
            await ledger.checkpoint()  # reached on a clean exit only
    finally:
        await backend.aclose()


@asynccontextmanager
async def lane_ledgers(settings: Settings, clock: Clock | None) -> AsyncIterator[list[Ledger]]:
    """The connections of lanes 2, 3 … (`--lanes`; core/engine/lanes.py),
    opened after the first (which made or migrated the ledger) and closed on
    exit (Settings.validate refuses lanes on SQLite)."""
    async with contextlib.AsyncExitStack() as stack:
        lanes = [
            await stack.enter_async_context(open_ledger(settings, clock=clock, create=False))
            for _ in range(settings.lanes - 1)
        ]
        yield lanes


@asynccontextmanager
async def open_with_lanes(
    settings: Settings, *, readonly: bool = False, create: bool = True, clock: Clock | None = None
) -> AsyncIterator[tuple[Ledger, list[Ledger]]]:
    """The ledger (`open_ledger`) and, when it is writable, its lanes'
    connections (`lane_ledgers`); all closed on exit, and those opened
    closed again when one is refused."""
    async with open_ledger(settings, readonly=readonly, create=create, clock=clock) as ledger:
        if readonly:
            yield ledger, []
            return
        async with lane_ledgers(settings, clock) as lanes:
            yield ledger, lanes
