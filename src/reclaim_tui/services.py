"""Builds the core's services from Settings: shared by the CLI and the console."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from reclaim_tui.config import Settings
from reclaim_tui.core.backend import Backend, LabelFinder
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.engine import Engine
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.core.models import Actor
from reclaim_tui.core.sinks import load_sink

__all__ = ["make_backend", "open_engine", "open_ledger"]


def make_backend(settings: Settings) -> Backend:
    """The Gemini backend for these settings; ConfigError if the real API has no key."""
    from reclaim_tui.core.gemini import GeminiBackend, resolve_api_key

    finder: LabelFinder | None = None
    if settings.emulator_lookup and settings.base_url:
        from reclaim_tui.emulator.lookup import EmulatorFinder

        finder = EmulatorFinder(settings.base_url, settings.request_timeout)
    return GeminiBackend(
        api_key=resolve_api_key(settings.api_key),
        base_url=settings.base_url,
        request_timeout=settings.request_timeout,
        finder=finder,
    )


@asynccontextmanager
async def open_ledger(
    settings: Settings, *, readonly: bool = False, create: bool = True, clock: Clock | None = None
) -> AsyncIterator[Ledger]:
    ledger = await Ledger.open(
        settings.db,
        busy_timeout=settings.busy_timeout,
        readonly=readonly,
        create=create,
        clock=clock,
    )
    try:
        yield ledger
    finally:
        await ledger.close()


@asynccontextmanager
async def open_engine(
    settings: Settings,
    *,
    actor: Actor | None = None,
    backend: Backend | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Engine]:
    """Backend first: a missing API key fails before the ledger is touched."""
    backend = backend or make_backend(settings)
    sink = load_sink(settings.sink, settings.out)
    try:
        async with open_ledger(settings, clock=clock) as ledger:
            yield Engine(ledger, backend, sink, config=settings.engine_config(actor))
    finally:
        await backend.aclose()
