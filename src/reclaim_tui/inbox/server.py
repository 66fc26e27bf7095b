"""`reclaim-tui inbox`: an HTTP receiver for the API's webhooks.

Each POST is, in order: limited (body size → 413, rate per client → 429),
verified (verify.py → 401, logged with the reason, nothing written),
parsed (a verified body that is not an event → 400), then recorded in the
ledger (core/ledger/inbox.py) — and only then answered 200. A redelivery (same
`webhook-id`) is answered 200 and changes nothing. A ledger that cannot be
written answers 503, so the API retries (it does for up to 24 h). The API
is never called on the request path: the engine's next pass does the `get`.

Refusals are counted in memory and added to the ledger's `inbox_counters`
every few seconds (the console shows them), never one write per refusal,
so a flood of forged deliveries cannot turn into a flood of writes. Logs
carry the reason and the webhook-id: never a secret, a token or a body.

What a stranger can hold is bounded (`ConnectionLimits`): a connection
must finish its request's headers within `header_timeout` and its body
within `body_timeout`, or it is closed; each client keeps at most
`per_client` connections open, all clients together `max_connections`
(at the cap, a new connection closes the oldest one still waiting for its
headers, so idle holders cannot lock a delivery out). Misbehaving clients
are logged one line per cause per `log_interval`, never with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import resource
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestHandler

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.errors import LedgerError
from reclaim_tui.inbox import DEFAULT_PATH
from reclaim_tui.inbox.verify import Refused, Verifier

__all__ = ["DEFAULT_PATH", "ConnectionLimits", "InboxServer", "RateLimit"]

log = logging.getLogger("reclaim_tui.inbox")

#: The API's payloads are thin ({type, data: {id, …}}): 64 KiB is plenty.
MAX_BODY = 64 * 1024
FLUSH_EVERY = 5.0


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


class _Gate:
    """The open connections: counted per client, and those waiting for a
    request's headers, oldest first (the ones closed at the cap)."""

    def __init__(self, limits: ConnectionLimits, note: Callable[[str, str], None]) -> None:
        self.limits = limits
        self.cap = limits.total()
        self.note = note
        self.by_client: Counter[str] = Counter()
        self.waiting: OrderedDict[_GuardedHandler, None] = OrderedDict()
        self.open = 0

    def admit(self, handler: _GuardedHandler) -> bool:
        client = handler.client
        if self.by_client[client] >= self.limits.per_client:
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

    def release(self, handler: _GuardedHandler) -> None:
        self.waiting.pop(handler, None)
        self.open -= 1
        self.by_client[handler.client] -= 1
        if self.by_client[handler.client] <= 0:
            del self.by_client[handler.client]


class _GuardedHandler(RequestHandler):
    """aiohttp's connection, admitted by the gate, closed when its first
    request's headers are late, and logging client errors one line per interval."""

    def __init__(self, manager: web.Server, gate: _Gate, **kwargs: Any) -> None:
        super().__init__(manager, **kwargs)
        self.gate = gate
        self.client = "?"
        self._admitted = False
        self._timer: asyncio.TimerHandle | None = None
        self._seen = 0  # requests when it last became idle (evictable)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.client = _client_key(str(peer[0]) if isinstance(peer, tuple) else "?")
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


class _GuardedSite(web.TCPSite):
    """A TCPSite whose connections are `_GuardedHandler`s."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, gate: _Gate) -> None:
        super().__init__(runner, host, port)
        self.gate = gate

    async def start(self) -> None:
        await web.BaseSite.start(self)
        manager = self._runner.server
        assert manager is not None
        limits = self.gate.limits

        def connection() -> _GuardedHandler:
            return _GuardedHandler(
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


class InboxServer:
    """Serves `path` on host:port (port 0 picks one) into `ledger`."""

    def __init__(
        self,
        ledger: Ledger,
        verifier: Verifier,
        *,
        host: str = "127.0.0.1",
        port: int = 8787,
        path: str = DEFAULT_PATH,
        limit: RateLimit | None = None,
        max_body: int = MAX_BODY,
        on_kept: Callable[[], None] | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self.ledger = ledger
        self.verifier = verifier
        self.host, self.port, self.path = host, port, path
        self.limit = limit or RateLimit()
        #: called after each new event is kept (the service wakes its loop)
        self.on_kept = on_kept
        self.refused: Counter[str] = Counter()
        self.accepted = 0
        self.duplicates = 0
        self._unflushed: Counter[str] = Counter()
        self.limits = limits or ConnectionLimits()
        self.complaints = Complaints(verifier.clock, self.limits.log_interval)
        self._gate = _Gate(self.limits, self._note)
        self._runner: web.AppRunner | None = None
        self._flusher: asyncio.Task[None] | None = None
        self.app = web.Application(client_max_size=max_body)
        self.app.router.add_post(path, self._receive)
        if path != "/":
            self.app.router.add_post("/", self._receive)

    @property
    def clock(self) -> Clock:
        return self.verifier.clock

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    # -- the request path -----------------------------------------------------------------
    async def _receive(self, request: web.Request) -> web.StreamResponse:
        client = request.remote or "?"
        if not self.limit.allow(client, self.clock.now()):
            return self._refuse("rate", "", 429, headers={"Retry-After": "1"})
        wid = request.headers.get("webhook-id", "")[:80]
        try:
            async with asyncio.timeout(self.limits.body_timeout):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._refuse("too-big", wid, 413)
        except TimeoutError:
            return await self._hang_up(request, wid)
        try:
            seen = await self.verifier.verify(request.headers, body)
        except Refused as exc:
            return self._refuse(exc.reason, wid, 401)
        try:
            payload = json.loads(body)
            event = inbox.event_from_payload(
                seen.webhook_id, payload, self.clock.now(), seen.signed_by
            )
        except (ValueError, RecursionError) as exc:
            return self._refuse("not-an-event", wid, 400, detail=type(exc).__name__)
        try:
            new = await inbox.record(self.ledger, event)
        except LedgerError as exc:
            log.warning("inbox: %s not kept, the ledger refused (%s); the API retries", wid, exc)
            return web.json_response({"error": "ledger unavailable"}, status=503)
        if new:
            self.accepted += 1
            if self.on_kept is not None:
                self.on_kept()
            log.info("inbox: kept %s %s for %s", wid, event.type, event.interaction)
        else:
            self.duplicates += 1
        return web.json_response({"kept": new})

    def _refuse(
        self,
        reason: str,
        wid: str,
        status: int,
        *,
        detail: str = "",
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        self._note(reason, f"{wid or 'a delivery'}{f': {detail}' if detail else ''}")
        return web.json_response({"error": reason}, status=status, headers=headers)

    async def _hang_up(self, request: web.Request, wid: str) -> web.StreamResponse:
        """A body slower than `body_timeout`: 408, and the connection closed."""
        self._note("slow-body", f"{request.remote}: {wid or 'a delivery'}")
        response = web.json_response({"error": "slow-body"}, status=408)
        response.force_close()
        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            await response.write_eof()
        if isinstance(request.protocol, _GuardedHandler):
            request.protocol.drop()
        return response

    def _note(self, reason: str, detail: str) -> None:
        """Count a refusal (added to the ledger's counters) and log it, one
        line per reason per interval."""
        self.refused[reason] += 1
        self._unflushed[f"refused:{reason}"] += 1
        self.complaints.say(reason, f"refused ({reason}) {detail}")

    # -- counters -------------------------------------------------------------------------
    async def flush(self) -> None:
        """Add the refusals counted since the last flush to the ledger."""
        counts, self._unflushed = self._unflushed, Counter()
        try:
            await inbox.count(self.ledger, counts, self.clock.now())
        except LedgerError:
            self._unflushed.update(counts)  # kept for the next flush

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            await self.flush()

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = _GuardedSite(self._runner, self.host, self.port, self._gate)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or ()
        if sockets:
            self.port = int(sockets[0].getsockname()[1])
        self._flusher = asyncio.create_task(self._flush_forever())

    async def stop(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self.flush()

    async def __aenter__(self) -> InboxServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
