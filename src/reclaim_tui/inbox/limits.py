"""What a stranger can hold of the inbox (inbox/server.py): deliveries per
client (`RateLimit`), connections per client and in all, and the seconds a
connection has for its request's headers and body (`ConnectionLimits`),
enforced on aiohttp's connections as they are made (`GuardedSite`).

A connection must finish its request's headers within `header_timeout` and
its body within `body_timeout`, or it is closed; each client keeps at most
`per_client` connections open, all clients together `max_connections` (at
the cap, a new connection closes the oldest one still waiting for its
headers, so idle holders cannot lock a delivery out). Misbehaving clients
are logged one line per cause per `log_interval` (`Complaints`), never with
a traceback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import resource
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

from reclaim_tui.core.clock import Clock
from reclaim_tui.inbox.forwarded import TrustedProxies

__all__ = [
    "Complaints",
    "ConnectionLimits",
    "Gate",
    "GuardedHandler",
    "GuardedSite",
    "RateLimit",
]

log = logging.getLogger("reclaim_tui.inbox")


@dataclass
class RateLimit:
    """A token bucket per client: `rate` deliveries/s, bursts of `burst`.

    A client is its IPv4 address, or its IPv6 /64 (one host can use a whole
    /64). At most `clients` buckets are kept: idle ones (refilled to `burst`)
    are forgotten first; when every bucket is busy, a client not seen before
    is refused until some are idle — a flood from many addresses cannot buy
    a fresh burst for the ones already limited. Behind a proxy every client
    is the proxy: put the proxy's own limit in front.
    """

    rate: float = 50.0
    burst: float = 200.0
    clients: int = 10_000
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)

    def allow(self, client: str, now: float) -> bool:
        client = _client_key(client)
        bucket = self._buckets.get(client)
        if bucket is None:
            if len(self._buckets) >= self.clients and not self._forget_idle(now):
                return False
            bucket = (self.burst, now)
        tokens, at = bucket
        tokens = min(self.burst, tokens + max(0.0, now - at) * self.rate)
        if tokens < 1.0:
            self._buckets[client] = (tokens, now)
            return False
        self._buckets[client] = (tokens - 1.0, now)
        return True

    def _forget_idle(self, now: float) -> bool:
        idle = [
            c for c, (tokens, at) in self._buckets.items()
            if tokens + (now - at) * self.rate >= self.burst
        ]  # fmt: skip
        for c in idle:
            del self._buckets[c]
        return bool(idle)


def _client_key(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def _descriptor_budget() -> int:
    """Half the process's open-file limit, at most 512: the rest stays for the
    ledger, the API client and the engine (systemd's default limit is 1024)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 512
    return max(16, min(512, soft // 2))


@dataclass(frozen=True)
class ConnectionLimits:
    """What one client, and all of them, may hold (seconds and counts).

    `max_connections` 0 means half the open-file limit, at most 512.
    """

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    #: seconds a kept-alive connection may wait for its next request
    keepalive: float = 75.0
    max_connections: int = 0
    per_client: int = 32
    log_interval: float = 60.0
    #: proxies whose connections count only toward the total (inbox/forwarded.py)
    trusted: TrustedProxies = field(default_factory=TrustedProxies)

    def total(self) -> int:
        return self.max_connections or _descriptor_budget()


class Complaints:
    """One log line per cause per interval: the first at once, the ones held
    back are counted into the next line of that cause."""

    def __init__(self, clock: Clock, interval: float) -> None:
        self.clock = clock
        self.interval = interval
        self._said: dict[str, float] = {}
        self._held: Counter[str] = Counter()

    def say(self, cause: str, message: str) -> None:
        now = self.clock.now()
        said = self._said.get(cause)
        if said is not None and now - said < self.interval:
            self._held[cause] += 1
            return
        self._said[cause] = now
        held = self._held.pop(cause, 0)
        more = f" (and {held} more in the last {self.interval:g} s)" if held else ""
        log.warning("inbox: %s%s", message, more)


class Gate:
    """The open connections: counted per client, and those waiting for a
    request's headers, oldest first (the ones closed at the cap)."""

    def __init__(self, limits: ConnectionLimits, note: Callable[[str, str], None]) -> None:
        self.limits = limits
        self.cap = limits.total()
        self.note = note
        self.by_client: Counter[str] = Counter()
        self.waiting: OrderedDict[GuardedHandler, None] = OrderedDict()
        self.open = 0

    def admit(self, handler: GuardedHandler) -> bool:
        client = handler.client
        proxy = self.limits.trusted.trusts(handler.peer)  # holds many clients' connections
        if self.by_client[client] >= self.limits.per_client and not proxy:
            self.note("client-connections", f"{client} holds {self.limits.per_client}")
            return False
        if self.open >= self.cap:
            if not self.waiting:
                self.note("connections", f"{self.cap} open, none idle")
                return False
            oldest = next(iter(self.waiting))
            self.note("evicted-idle", f"{self.cap} open; closed an idle one of {oldest.client}")
            oldest.drop()
        self.by_client[client] += 1
        self.open += 1
        self.waiting[handler] = None
        return True

    def release(self, handler: GuardedHandler) -> None:
        self.waiting.pop(handler, None)
        self.open -= 1
        self.by_client[handler.client] -= 1
        if self.by_client[handler.client] <= 0:
            del self.by_client[handler.client]


class GuardedHandler(RequestHandler):
    """aiohttp's connection, admitted by the gate, closed when its first
    request's headers are late, and logging client errors one line per interval."""

    def __init__(self, manager: web.Server, gate: Gate, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.gate = gate
        self.client = "?"
        self.peer = "?"
        self._admitted = False
        self._timer: asyncio.TimerHandle | None = None
        self._seen = 0  # requests when it last became idle (evictable)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if isinstance(peer, tuple) else "?"
        self.client = _client_key(self.peer)
        if not self.gate.admit(self):
            transport.close()
            return
        self._admitted = True
        super().connection_made(transport)
        self._timer = self._loop.call_later(self.gate.limits.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._timer = None
        # aiohttp's own fields: a request being answered, or pipelined ones queued
        busy = self._request_in_progress or bool(self._messages)
        if busy or self._request_count or self.transport is None:
            return
        self.gate.note("slow-headers", f"{self.client} sent no request in time")
        self.drop()

    def drop(self) -> None:
        """Close now (the gate counts it closed at once)."""
        if self._admitted:
            self._admitted = False
            self.gate.release(self)
        self.force_close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_count != self._seen:  # a whole request came: no longer idle
            self.gate.waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    async def finish_response(
        self, request: web.BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        answered = await super().finish_response(request, resp, start_time)
        if self.transport is not None and self._admitted and not self._messages:
            # Kept alive and idle: closed by aiohttp after `keepalive` s without a
            # next request, or at the cap, before any connection that is busy.
            self._seen = self._request_count
            self.gate.waiting[self] = None
            self.gate.waiting.move_to_end(self)
        return answered

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._admitted:
            self._admitted = False
            self.gate.release(self)
        super().connection_lost(exc)

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info")
        if isinstance(exc, HttpProcessingError):  # the client's fault: no traceback
            self.gate.note("bad-request", f"{self.client}: {type(exc).__name__}")
            return
        super().log_exception(*args, **kwargs)


class GuardedSite(web.TCPSite):
    """A TCPSite whose connections are `GuardedHandler`s."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, gate: Gate) -> None:
        super().__init__(runner, host, port)
        self.gate = gate

    async def start(self) -> None:
        await web.BaseSite.start(self)
        manager = self._runner.server
        assert manager is not None
        limits = self.gate.limits

        def connection() -> GuardedHandler:
            return GuardedHandler(
                manager,
                self.gate,
                loop=asyncio.get_running_loop(),
                access_log=None,
                # aiohttp closes a kept-alive connection idle this long (its
                # clients keep theirs 15 s: a shorter wait would race their reuse)
                keepalive_timeout=max(limits.keepalive, limits.header_timeout),
                lingering_time=min(10.0, limits.body_timeout),
            )

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(connection, self._host, self._port)
