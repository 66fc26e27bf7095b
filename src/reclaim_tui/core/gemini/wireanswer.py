"""A 200 answer of UTF-8 JSON read straight from aiohttp, without httpx's response.

Over the aiohttp transport, `WireSend` (fastwire.py) wraps each answer in
httpx's response the way httpx-aiohttp does: its headers parsed again into
httpx's, a byte stream, its decoders and chunker. A 200 answer the fast calls
read as plain JSON needs none of that: `WireAnswer` keeps aiohttp's answer,
reads its body in the transport's chunks (errors mapped by the transport's own
`map_aiohttp_exceptions`, so "sent" and "outcome unknown" read as before), and
gives its text. Only an answer whose bytes httpx would read the same way is
taken: status 200, one content type that is UTF-8 JSON (`utf8_json`), no
content encoding to undo and no cookie to keep. Anything else is httpx's
response as before; so is this one whenever its text is not the plain shape
(`as_httpx`: the same status, headers and body, for the SDK's own parser).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from reclaim_tui.core.gemini.answers import plain_answer

__all__ = ["JsonKinds", "WireAnswer"]


class JsonKinds:
    """Which content types a straight answer may have, decided once per type:
    UTF-8 JSON by fastsend's rule, and JSON by the SDK's own `match_response`."""

    #: Distinct content types remembered (a server sends one or two).
    KEPT = 16

    def __init__(self, utf8_json: Callable[[str], bool], match: Callable[..., bool]) -> None:
        self._utf8_json = utf8_json
        self._match = match
        self._known: dict[str, bool] = {}

    def straight(self, answer: Any) -> bool:
        """Whether aiohttp's `answer` may be read as a `WireAnswer`."""
        if answer.status != 200:
            return False
        headers = answer.headers
        if "set-cookie" in headers or "content-encoding" in headers:
            return False
        kinds = headers.getall("content-type", ())
        if len(kinds) != 1:
            return False
        kind = kinds[0]
        known = self._known.get(kind)
        if known is None:
            known = self._utf8_json(kind) and bool(
                self._match(_Head(kind), "200", "application/json")
            )
            if len(self._known) < self.KEPT:
                self._known[kind] = known
        return known


class _Head:
    """What `match_response` reads of an answer: its status and content type."""

    __slots__ = ("headers",)
    status_code = 200

    def __init__(self, kind: str) -> None:
        self.headers = {"content-type": kind}


class WireAnswer:
    """aiohttp's 200 answer of UTF-8 JSON; read like httpx's streamed response
    (`aiter_bytes`, `aclose`, `_content`: what the fast calls' `_read_body` uses)."""

    __slots__ = ("_answer", "_content", "_encoding", "_wire", "headers")
    status_code = 200

    def __init__(self, wire: Any, answer: Any, encoding: Any) -> None:
        self._wire = wire  # httpx-aiohttp's transport module
        self._answer = answer
        self._encoding = encoding
        self._content = b""
        self.headers = answer.headers

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body in the transport's chunks, its errors mapped as it maps them."""
        size = self._wire.AiohttpResponseStream.CHUNK_SIZE
        with self._wire.map_aiohttp_exceptions():
            async for chunk in self._answer.content.iter_chunked(size):
                yield chunk

    async def aclose(self) -> None:
        with self._wire.map_aiohttp_exceptions():
            await self._answer.__aexit__(None, None, None)

    async def read(self) -> None:
        """Read the whole body, then close (as httpx's `aread` does)."""
        parts = [chunk async for chunk in self.aiter_bytes()]
        self._content = b"".join(parts)
        await self.aclose()

    def plain(self) -> dict[str, Any] | None:
        """`plain_answer` of the body read; None: not that shape, or not UTF-8
        (httpx's text of it differs: `as_httpx`)."""
        try:
            text = self._content.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return plain_answer(text)

    def as_httpx(self) -> Any:
        """httpx's response of this answer, as the transport would have made it,
        its body the one read."""
        answer, httpx = self._answer, self._wire.httpx
        extensions = {"http_version": b"HTTP/1.1"}
        if answer.reason:
            extensions["reason_phrase"] = answer.reason.encode()
        response = httpx.Response(
            status_code=200,
            headers=answer.raw_headers,
            content=self._content,
            extensions=extensions,
        )
        response.default_encoding = self._encoding
        return response
