"""`reclaim-tui inbox`: an HTTP receiver for the API's webhooks.

Each POST is, in order: limited (body size → 413, rate per client → 429),
verified (verify.py → 401, logged with the reason, nothing written),
parsed (a verified body that is not an event → 400), then recorded in the
ledger (core/inbox.py) — and only then answered 200. A redelivery (same
`webhook-id`) is answered 200 and changes nothing. A ledger that cannot be
written answers 503, so the API retries (it does for up to 24 h). The API
is never called on the request path: the engine's next pass does the `get`.

Refusals are counted in memory and added to the ledger's `inbox_counters`
every few seconds (the console shows them), never one write per refusal,
so a flood of forged deliveries cannot turn into a flood of writes. Logs
carry the reason and the webhook-id: never a secret, a token or a body.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from aiohttp import web

from reclaim_tui.core import inbox
from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import Ledger
from reclaim_tui.errors import LedgerError
from reclaim_tui.inbox import DEFAULT_PATH
from reclaim_tui.inbox.verify import Refused, Verifier

__all__ = ["DEFAULT_PATH", "InboxServer", "RateLimit"]

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
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._refuse("too-big", request.headers.get("webhook-id", ""), 413)
        wid = request.headers.get("webhook-id", "")[:80]
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
        self.refused[reason] += 1
        self._unflushed[f"refused:{reason}"] += 1
        if reason != "rate" or self.refused[reason] % 100 == 1:  # a flood logs once per 100
            log.warning(
                "inbox: refused %s (%s)%s",
                wid or "a delivery",
                reason,
                f": {detail}" if detail else "",
            )
        return web.json_response({"error": reason}, status=status, headers=headers)

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
        site = web.TCPSite(self._runner, self.host, self.port)
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
