"""The keys that sign dynamic webhooks' JWTs, read from a JWKS URL on the
inbox's own event loop.

The set is fetched with aiohttp (the HTTP client of the inbox itself), not with
`jwt.PyJWKClient`: that client fetches with urllib, which blocks, so it needs a
thread, and it holds one lock across the fetch — while the endpoint was slow,
every delivery waited for a thread behind it. Here a fetch is one task among the
inbox's others: a hanging endpoint holds only the deliveries that need a key
the set does not have yet, for at most `timeout` seconds. PyJWT still reads the
document (`jwt.PyJWKSet.from_dict`: the same keys, the same refusal of a set
with no usable key) and checks the signatures (verify.py).

No thread is started for a refresh. Resolving a host name is asyncio's own
(`loop.getaddrinfo`); the URL of a test or of the demo's emulator is an address
and needs none. The proxy is the one urllib would take from the environment
(HTTP(S)_PROXY, NO_PROXY), read here rather than by aiohttp's `trust_env`,
which would also look for a netrc file on a thread of the loop's executor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import urllib.parse
import urllib.request
from typing import Any

import aiohttp
import jwt

__all__ = ["MAX_JWKS_BYTES", "JwksUnreachable", "KeyCache"]

log = logging.getLogger("reclaim_tui.inbox")

#: Google's set is a few kilobytes; anything past this is not a key set.
MAX_JWKS_BYTES = 1024 * 1024


class JwksUnreachable(Exception):
    """The key set could not be read (its message names the error's type only)."""


class KeyCache:
    """The JWKS's keys by kid. A known kid is answered at once (a stale set
    is refreshed in the background); an unknown kid waits for one refresh —
    a single fetch at a time, at most every `cooldown` seconds, given up
    after `timeout` — and gets None if the set still lacks it."""

    def __init__(
        self, url: str, lifespan: float = 300.0, cooldown: float = 30.0, timeout: float = 5.0
    ) -> None:
        self.url = url
        self.lifespan, self.cooldown, self.timeout = lifespan, cooldown, timeout
        self.keys: dict[str, Any] = {}
        self.fetched_at = float("-inf")
        self._tried_at = float("-inf")
        self._refresh: asyncio.Task[None] | None = None

    async def key(self, kid: str, now: float) -> Any | None:
        """The key with this kid, or None; `JwksUnreachable` when the
        refresh it waited for failed."""
        if kid in self.keys:
            if now - self.fetched_at > self.lifespan:
                self._start(now)
            return self.keys[kid]
        if now - self._tried_at < self.cooldown and not self._running():
            return None
        # `wait`, not `await`: a waiter that gives up (its client hung up)
        # leaves the fetch to the others, and a fetch that failed, timed out
        # or was stopped is this waiter's refusal (the sender retries).
        refresh = self._start(now)
        await asyncio.wait((refresh,))
        if refresh.cancelled():
            raise JwksUnreachable("stopped")
        failure = refresh.exception()
        if failure is not None:
            raise JwksUnreachable(type(failure).__name__) from failure
        return self.keys.get(kid)

    async def aclose(self) -> None:
        """Stop a refresh in flight (the inbox is stopping)."""
        task, self._refresh = self._refresh, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _running(self) -> bool:
        return self._refresh is not None and not self._refresh.done()

    def _start(self, now: float) -> asyncio.Task[None]:
        if self._refresh is None or self._refresh.done():
            self._tried_at = now
            self._refresh = asyncio.create_task(self._fetch(now), name="jwks-refresh")
            # Its failure is reported to whoever waits; none may be left waiting.
            self._refresh.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._refresh

    async def _fetch(self, now: float) -> None:
        try:
            async with asyncio.timeout(self.timeout):
                document = await _download(self.url)
            found = jwt.PyJWKSet.from_dict(_json_object(document))
            keys = {k.key_id: k.key for k in found.keys if k.key_id}
        except Exception as exc:  # garbage, a 5xx, a timeout: nothing is trusted
            log.warning("inbox: the JWKS could not be read (%s)", type(exc).__name__)
            raise
        self.keys, self.fetched_at = keys, now


async def _download(url: str) -> bytes:
    """The body of a 2xx answer to GET `url`, at most `MAX_JWKS_BYTES`."""
    headers = {"accept": "application/json"}
    async with (
        aiohttp.ClientSession(raise_for_status=True) as session,
        session.get(url, headers=headers, proxy=_proxy_for(url)) as response,
    ):
        body = bytearray()
        async for chunk in response.content.iter_chunked(64 * 1024):
            body += chunk
            if len(body) > MAX_JWKS_BYTES:
                raise ValueError("the key set is too large")
        return bytes(body)


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for `url`, as urllib would choose it."""
    parts = urllib.parse.urlsplit(url)
    # NO_PROXY as urllib reads it (typeshed lacks this public function of urllib.request).
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if parts.hostname and bypass(parts.hostname):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


def _json_object(document: bytes) -> dict[str, Any]:
    data = json.loads(document)
    if not isinstance(data, dict):
        raise ValueError("the key set is not a JSON object")
    return data
