"""`reclaim-tui inbox`: serve until SIGINT/SIGTERM, then stop cleanly (the
refusal counters are flushed, the ledger closed)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager

from reclaim_tui.bootstrap import open_ledger
from reclaim_tui.config import Settings
from reclaim_tui.core.clock import SystemClock
from reclaim_tui.core.ledger.owner import this_process
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.registry import BEAT, Beacon
from reclaim_tui.errors import ConfigError
from reclaim_tui.inbox.limits import ConnectionLimits
from reclaim_tui.inbox.server import InboxServer
from reclaim_tui.inbox.verify import Verifier

__all__ = ["keep_registered", "parse_listen", "serve_inbox"]


def parse_listen(listen: str) -> tuple[str, int]:
    """`HOST:PORT` (an IPv6 host in brackets) → (host, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--listen {listen!r}: expected HOST:PORT, e.g. 127.0.0.1:8787")
    return (host.strip("[]") or "127.0.0.1"), int(port)


def _tally(server: InboxServer) -> str:
    return (
        f"accepted={server.accepted} redeliveries={server.duplicates}"
        f" refused={sum(server.refused.values())}"
    )


async def keep_registered(ledger: Ledger, server: InboxServer, stop: asyncio.Event) -> None:
    """Until `stop`: the inbox's row in the process registry
    (core/ledger/registry.py) says it is up, with its counts, every BEAT
    seconds, and `stopped` at the end."""
    beacon = Beacon(ledger, str(this_process()), "inbox", interval=BEAT)
    await beacon.start()
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), BEAT)
        beacon.last_pass, beacon.last_pass_at = _tally(server), ledger.clock.now()
        await beacon.beat()
    await beacon.stopped()


async def serve_inbox(
    db: str,
    listen: str,
    path: str,
    secrets: Sequence[str],
    jwks_url: str | None,
    audience: str | None,
    limits: ConnectionLimits | None = None,
    watch: Watch | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM; `watch(server)` (`--metrics-listen`: the
    caller's metrics listener, its URL said) runs while the inbox does."""
    host, port = parse_listen(listen)
    if not path.startswith("/"):
        raise ConfigError("--path must start with /")
    try:
        verifier = Verifier(SystemClock(), secrets, jwks_url or None, audience)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    # A short busy timeout: a locked ledger answers 503 within seconds (the
    # API retries), instead of holding deliveries past the sender's timeout.
    async with open_ledger(Settings(db=db, busy_timeout=2.0)) as ledger:
        server = InboxServer(ledger, verifier, host=host, port=port, path=path, limits=limits)
        try:
            await server.start()
        except OSError as exc:
            raise ConfigError(f"--listen {listen}: cannot bind ({exc.strerror or exc})") from exc
        try:
            async with watch(server) if watch is not None else _unwatched() as watched:
                _say_listening(server, secrets, jwks_url, watched)
                await keep_registered(ledger, server, stop)
        finally:
            await server.stop()
        print(
            f"inbox: stopped; kept {server.accepted}, redeliveries {server.duplicates},"
            f" refused {sum(server.refused.values())}",
            file=sys.stderr,
        )


#: What watches a running inbox (its metrics listener): a context whose value is its URL.
Watch = Callable[[InboxServer], AbstractAsyncContextManager[str | None]]


@contextlib.asynccontextmanager
async def _unwatched() -> AsyncIterator[str | None]:
    yield None


def _say_listening(
    server: InboxServer, secrets: Sequence[str], jwks_url: str | None, watched: str | None
) -> None:
    kinds = ", ".join(k for k, on in (("HMAC", bool(secrets)), ("JWT", bool(jwks_url))) if on)
    print(
        f"inbox: listening on {server.url} ({kinds or 'nothing'} accepted)",
        file=sys.stderr,
        flush=True,
    )
    if watched is not None:
        print(f"inbox: metrics on {watched} (/metrics, /healthz)", file=sys.stderr, flush=True)
