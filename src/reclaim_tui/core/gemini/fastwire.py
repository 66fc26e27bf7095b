"""The fast calls over the aiohttp transport, without building httpx's request.

Over the aiohttp transport (httpx-aiohttp), the SDK's httpx client builds a
request (its URL parsed, its headers merged and checked), runs it through its
auth, redirect, hook and cookie steps, and the transport turns it back into
the arguments of one `aiohttp.ClientSession.request` call. For the fast calls
none of those steps changes anything: `WireSend` makes that call itself, with
the arguments the transport would have made from the stock request, and wraps
the answer in httpx's response the way the transport does.

It is used only where that holds, checked for each client on its first call:
httpx-aiohttp a verified version (`WIRE_TRANSPORT_VERSIONS`, whose transport
this mirrors), the client's transport for the URL that transport without a
proxy, no auth, no event hooks, no redirects followed; and the arguments made
directly equal to those derived from a request built the stock way. On each
call, a client with cookies, a closed one, or httpx's request log switched on
takes the stock send. Errors are httpx-aiohttp's own mapping of aiohttp's, so
errors.py reads "not sent" and "outcome unknown" from them as before; an
answer other than a 200 carries its request, built the stock way.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from importlib import metadata
from typing import Any

from reclaim_tui.core.gemini.fastsend import utf8_json
from reclaim_tui.core.gemini.wireanswer import JsonKinds, WireAnswer

__all__ = ["WIRE_TRANSPORT_VERSIONS", "WireSend"]

#: httpx-aiohttp versions whose transport's request arguments this mirrors
#: (tests/unit/test_fast_wire.py compares both ways of sending).
WIRE_TRANSPORT_VERSIONS: tuple[str, ...] = ("0.2.0",)

_EXTENSIONS = {"http_version": b"HTTP/1.1"}


def _transport_module() -> Any:
    """httpx-aiohttp's httpx2 transport module, when a verified version is installed."""
    try:
        if metadata.version("httpx-aiohttp") not in WIRE_TRANSPORT_VERSIONS:
            return None
        return importlib.import_module("httpx_aiohttp.httpx2.transport")
    except Exception:  # not installed, or laid out otherwise: the stock send
        return None


class WireSend:
    """Sends of one fast call straight through the aiohttp session (see the module)."""

    def __init__(self, match: Callable[..., bool] | None = None) -> None:
        #: the SDK's `match_response`: with it, a 200 answer of UTF-8 JSON is
        #: read straight from aiohttp (wireanswer.py); without, httpx's response
        self._match = match
        self._kinds: JsonKinds | None = None
        self._client: Any = None
        self._ok = False
        self._wire: Any = None  # the transport module
        self._transport: Any = None
        self._headers: list[tuple[str, str]] = []  # without content-length
        self._length_at = -1  # where content-length goes, -1: not sent
        self._timeout: Any = None
        self._log: logging.Logger | None = None
        self._encoding: Any = None  # the client's default encoding for answers

    def usable(self, client: Any, maker: Any, method: str, url: str, content: str | None) -> bool:
        """Whether this call may go straight through; checks a new client first."""
        if client is not self._client:
            self._check(client, maker, method, url, content)
        return bool(
            self._ok
            and not client.cookies
            and not client.is_closed
            and not (self._log is not None and self._log.isEnabledFor(logging.INFO))
        )

    def _check(self, client: Any, maker: Any, method: str, url: str, content: str | None) -> None:
        self._client, self._ok = client, False
        wire = _transport_module()
        if wire is None:
            return
        try:
            httpx = wire.httpx
            transport = client._transport_for_url(httpx.URL(url))
            if (
                type(transport) is not wire.AiohttpTransport
                or transport.proxy is not None
                or client.auth is not None
                or client.follow_redirects
                or any(client.event_hooks.values())
            ):
                return
            stock = maker.build(client, method, url, content)
            self._wire, self._transport = wire, transport
            self._log = logging.getLogger(httpx.__name__)
            self._encoding = client._default_encoding
            items = list(stock.headers.items())
            names = [k for k, _ in items]
            self._length_at = names.index("content-length") if "content-length" in names else -1
            self._headers = [(k, v) for k, v in items if k != "content-length"]
            timeout = stock.extensions.get("timeout", {})
            self._timeout = wire.ClientTimeout(
                sock_connect=timeout.get("connect"),
                sock_read=timeout.get("read"),
                connect=timeout.get("pool"),
            )
            self._ok = _stock_arguments(stock, timeout) == self._arguments(method, url, content)
            encoding = self._encoding
            self._kinds = None
            if self._match is not None:
                self._kinds = JsonKinds(lambda kind: utf8_json(kind, encoding), self._match)
        except Exception:  # an unexpected client or transport: the stock send
            self._ok = False

    def _arguments(self, method: str, url: str, content: str | None) -> tuple[Any, ...]:
        """What the transport passes aiohttp (`_stock_arguments`), made directly."""
        data = content.encode("utf-8") if content else None
        headers = self._headers
        if self._length_at >= 0:
            headers = list(headers)
            headers.insert(self._length_at, ("content-length", str(len(data or b""))))
        t = self._timeout
        return (method, url, headers, data, (t.sock_connect, t.sock_read, t.connect), None)

    async def send(
        self, client: Any, maker: Any, method: str, url: str, content: str | None, stream: bool
    ) -> Any:
        """One request, as the stock send makes it; its answer (body read unless
        `stream`): a `WireAnswer` where one may be read straight, else httpx's."""
        wire, transport = self._wire, self._transport
        _, _, headers, data, _, _ = self._arguments(method, url, content)
        if not isinstance(transport.client, wire.ClientSession):
            transport.client = transport.get_client()
        with wire.map_aiohttp_exceptions():
            answer = await transport.client.request(
                method=method,
                url=url,
                headers=dict(headers),
                data=data,
                allow_redirects=False,
                auto_decompress=False,
                compress=False,
                timeout=self._timeout,
                server_hostname=None,
                proxy=None,
                proxy_auth=None,
                proxy_headers=None,
            ).__aenter__()
        if self._kinds is not None and self._kinds.straight(answer):
            straight = WireAnswer(wire, answer, self._encoding)
            if not stream:
                try:
                    await straight.read()
                except BaseException:
                    await straight.aclose()
                    raise
            return straight
        extensions = dict(_EXTENSIONS)
        if answer.reason:
            extensions["reason_phrase"] = answer.reason.encode()
        response = wire.httpx.Response(
            status_code=answer.status,
            headers=answer.raw_headers,
            stream=wire.AiohttpResponseStream(answer),
            extensions=extensions,
        )
        response.default_encoding = self._encoding
        try:
            if response.status_code != 200 or "set-cookie" in response.headers:
                response.request = maker.build(client, method, url, content)
                client.cookies.extract_cookies(response)
            if not stream:
                await response.aread()
        except BaseException:
            await response.aclose()
            raise
        return response


def _stock_arguments(request: Any, timeout: dict[str, Any]) -> tuple[Any, ...]:
    """The arguments httpx-aiohttp's transport gives aiohttp for `request`
    (method, URL, header pairs, body, timeouts, server name)."""
    data = request.content or None
    return (
        request.method,
        str(request.url),
        list(request.headers.items()),
        data,
        (timeout.get("connect"), timeout.get("read"), timeout.get("pool")),
        request.extensions.get("sni_hostname"),
    )
