"""What a service opens around its loop (service.py's `run_service`): the
engine once its ledger is reachable, the SDK's client built before `ready`,
the webhook inbox (`--inbox-listen`), the control socket (`--control`) and
the metrics listener (`--metrics-listen`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from reclaim_tui.bootstrap import open_engine, open_ledger
from reclaim_tui.config import Settings
from reclaim_tui.core.engine.engine import Engine
from reclaim_tui.core.models import Actor
from reclaim_tui.errors import LedgerUnavailableError
from reclaim_tui.inbox.forwarded import TrustedProxies

if TYPE_CHECKING:
    from reclaim_tui.runner.control_server import ServiceSide
    from reclaim_tui.runner.metrics import ServiceMetrics

__all__ = [
    "InboxOptions",
    "control_socket",
    "engine_when_reachable",
    "inbox_server",
    "loop_name",
    "metrics_endpoint",
    "warm",
]


@dataclass(frozen=True)
class InboxOptions:
    """The webhook inbox run inside the service (`--inbox-listen`)."""

    listen: str
    secrets: tuple[str, ...] = ()
    jwks_url: str | None = None
    audience: str | None = None
    #: the proxies whose forwarding header names the client (inbox/forwarded.py)
    trusted: TrustedProxies = field(default_factory=TrustedProxies)


async def engine_when_reachable(
    stack: contextlib.AsyncExitStack, settings: Settings, out: TextIO, *, wait: bool
) -> Engine:
    """The engine, once its ledger can be opened. A database server not
    reachable yet (a service started by systemd before its database) is
    waited for as it is mid-run: `ledger_unavailable` lines, 1 s doubling to
    30 s; any other ledger error ends the service at once."""
    failures = 0
    while True:
        try:
            return await stack.enter_async_context(open_engine(settings, actor=Actor.SERVICE))
        except LedgerUnavailableError as exc:
            if not wait:
                raise
            failures += 1
            pause = min(30.0, 2.0 ** (failures - 1))
            line = {"at": round(time.time(), 3), "event": "ledger_unavailable", "pid": os.getpid()}
            line |= {"error": str(exc), "retry_in_s": pause, "starting": True}
            print(json.dumps(line, separators=(",", ":")), file=out, flush=True)
            await asyncio.sleep(pause)


async def warm(engine: Engine) -> str | None:
    """Build the backend's API client now; the SDK it uses (`google-genai 3.6.1`),
    or None for a backend without one (the tests' fake)."""
    warm = getattr(engine.backend, "warm", None)
    if warm is None:
        return None
    await warm()
    from importlib.metadata import version

    return f"google-genai {version('google-genai')}"


def loop_name() -> str:
    """The running event loop's maker, as `run --loop` names it ("asyncio",
    "uvloop"): read off the loop itself, so `ready` says the loop it runs on."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


@contextlib.asynccontextmanager
async def control_socket(
    settings: Settings, path: str | None, engine: Engine, loop: ServiceSide
) -> AsyncIterator[None]:
    if path is None:
        yield
        return
    from reclaim_tui.runner.control_server import ControlServer

    server = ControlServer(path, engine, loop, settings)
    await server.start()
    try:
        yield
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def inbox_server(
    settings: Settings,
    options: InboxOptions | None,
    wake: Callable[[], None],
    metrics: ServiceMetrics | None = None,
) -> AsyncIterator[str | None]:
    if options is None:
        yield None
        return
    from reclaim_tui.core.clock import SystemClock
    from reclaim_tui.inbox.command import parse_listen
    from reclaim_tui.inbox.limits import ConnectionLimits
    from reclaim_tui.inbox.server import InboxServer
    from reclaim_tui.inbox.verify import Verifier

    host, port = parse_listen(options.listen)
    verifier = Verifier(SystemClock(), options.secrets, options.jwks_url, options.audience)
    # Its own connection: the inbox writes while a pass holds the engine's.
    async with open_ledger(settings.with_(busy_timeout=2.0)) as ledger:
        limits = ConnectionLimits(trusted=options.trusted)
        server = InboxServer(ledger, verifier, host=host, port=port, on_kept=wake, limits=limits)
        if metrics is not None:
            metrics.watch_inbox(server)
        await server.start()
        try:
            yield server.url
        finally:
            await server.stop()


@contextlib.asynccontextmanager
async def metrics_endpoint(
    listen: str | None, metrics: ServiceMetrics | None, engine: Engine, health: Callable[[], str]
) -> AsyncIterator[str | None]:
    """`--metrics-listen`: /metrics and /healthz while the service runs; its URL."""
    if listen is None or metrics is None:
        yield None
        return
    from reclaim_tui.core.costs import load_prices
    from reclaim_tui.runner.metrics import metrics_listener

    async with metrics_listener(listen, metrics, engine.ledger, health, load_prices) as url:
        yield url
