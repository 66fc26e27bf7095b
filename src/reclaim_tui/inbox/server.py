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

What a stranger can hold is bounded: deliveries per client, connections
per client and in all, and the seconds a request may take (inbox/limits.py).
Behind a trusted proxy a client is the one it names (inbox/forwarded.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import Callable
from types import TracebackType

from aiohttp import web

from reclaim_tui.core.clock import Clock
from reclaim_tui.core.ledger import inbox
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.errors import LedgerError
from reclaim_tui.inbox import DEFAULT_PATH
from reclaim_tui.inbox.limits import (
    Complaints,
    ConnectionLimits,
    Gate,
    GuardedHandler,
    GuardedSite,
    RateLimit,
)
from reclaim_tui.inbox.verify import Refused, Verifier

__all__ = ["DEFAULT_PATH", "InboxServer"]

log = logging.getLogger("reclaim_tui.inbox")

#: The API's payloads are thin ({type, data: {id, …}}): 64 KiB is plenty.
MAX_BODY = 64 * 1024
FLUSH_EVERY = 5.0


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
        #: deliveries answered 503 for a ledger that could not be written; the
        #: times it became unusable, and whether it answered last time
        self.ledger_refusals = 0
        self.ledger_outages = 0
        self.ledger_is_up = True
        self._unflushed: Counter[str] = Counter()
        self.limits = limits or ConnectionLimits()
        self.complaints = Complaints(verifier.clock, self.limits.log_interval)
        self._gate = Gate(self.limits, self._note)
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
        client = self._client(request)
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
            self.ledger_refusals += 1
            self._ledger_answered(False)
            return web.json_response({"error": "ledger unavailable"}, status=503)
        self._ledger_answered(True)
        if new:
            self.accepted += 1
            if self.on_kept is not None:
                self.on_kept()
            log.info("inbox: kept %s %s for %s", wid, event.type, event.interaction)
        else:
            self.duplicates += 1
        return web.json_response({"kept": new})

    def _client(self, request: web.Request) -> str:
        """Who sent it: the peer, or the client a trusted proxy names."""
        trusted = self.limits.trusted
        peer = request.remote or "?"
        return trusted.client(peer, request.headers.getall(trusted.header, []))

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
        self._note("slow-body", f"{self._client(request)}: {wid or 'a delivery'}")
        response = web.json_response({"error": "slow-body"}, status=408)
        response.force_close()
        with contextlib.suppress(ConnectionError):
            await response.prepare(request)
            await response.write_eof()
        if isinstance(request.protocol, GuardedHandler):
            request.protocol.drop()
        return response

    def _note(self, reason: str, detail: str) -> None:
        """Count a refusal (added to the ledger's counters) and log it, one
        line per reason per interval."""
        self.refused[reason] += 1
        self._unflushed[f"refused:{reason}"] += 1
        self.complaints.say(reason, f"refused ({reason}) {detail}")

    def _ledger_answered(self, up: bool) -> None:
        """Note the ledger becoming unusable, or coming back (said once each)."""
        if up == self.ledger_is_up:
            return
        self.ledger_is_up = up
        if not up:
            self.ledger_outages += 1
        log.warning("inbox: the ledger %s", "is back" if up else "is unavailable")

    # -- counters -------------------------------------------------------------------------
    async def flush(self) -> None:
        """Add the refusals counted since the last flush to the ledger."""
        counts, self._unflushed = self._unflushed, Counter()
        if not counts:
            return
        try:
            await inbox.count(self.ledger, counts, self.clock.now())
        except LedgerError:
            self._unflushed.update(counts)  # kept for the next flush
            self._ledger_answered(False)
        else:
            self._ledger_answered(True)

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_EVERY)
            await self.flush()

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = GuardedSite(self._runner, self.host, self.port, self._gate)
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
        await self.verifier.aclose()
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
