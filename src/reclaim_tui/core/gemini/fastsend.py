"""The fast calls' request and answer text, without httpx's per-call merging and parsing.

`RequestMaker.build` gives the request `client.build_request` would give for the
fast calls' template (the same method, URL, headers, cookies, body and
extensions): the client's headers and the template's are merged once per
client, not on every call. The first request for each client is built both
ways and compared; on any difference every later one is built the stock way.

`utf8_text` gives `response.text` for the answers the API sends (JSON in
UTF-8, said by the content type or by the client's default encoding) without
httpx parsing the content type through the `email` package on every answer;
None where it could differ (another charset, bytes that are not UTF-8), and
the caller reads `response.text`.

Public httpx names only (`build_request`, `headers`, `cookies`, `timeout`,
the request's class): it works over the SDK's httpx2 client and over
httpx-aiohttp's client alike.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RequestMaker", "utf8_json", "utf8_text"]

# Content types whose text is UTF-8 for certain; with no charset, the client's
# default encoding decides (httpx's own rule), checked where this is used.
_UTF8_TYPES = frozenset({"application/json;charset=utf-8", 'application/json;charset="utf-8"'})


class RequestMaker:
    """Requests of one fast call: its template's headers and timeout, for any client."""

    def __init__(self, headers: dict[str, str], timeout: Any) -> None:
        self._headers = headers
        self._timeout = timeout
        self._client: Any = None
        self._merged: Any = None  # the client's headers with the template's; None: stock
        self._request_type: Any = None

    def build(self, client: Any, method: str, url: str, content: str | None) -> Any:
        """The request `client.build_request` builds for these arguments."""
        if client is not self._client:
            return self._first(client, method, url, content)
        if self._merged is None:
            return self._stock(client, method, url, content)
        return self._request_type(
            method,
            url,
            content=content,
            headers=self._merged,
            cookies=client.cookies,
            extensions={"timeout": self._timeout_for(client)},
        )

    def _first(self, client: Any, method: str, url: str, content: str | None) -> Any:
        # Build it both ways; the direct way is kept for this client only if equal.
        stock = self._stock(client, method, url, content)
        self._client, self._merged, self._request_type = client, None, type(stock)
        try:
            merged = type(client.headers)(client.headers)
            merged.update(self._headers)
            self._merged = merged
            direct = self.build(client, method, url, content)
            if not _same(stock, direct):
                self._merged = None
        except Exception:  # an unexpected client: build every request the stock way
            self._merged = None
        return stock

    def _stock(self, client: Any, method: str, url: str, content: str | None) -> Any:
        return client.build_request(
            method,
            url,
            content=content,
            headers=self._headers,
            extensions={"timeout": self._timeout} if self._timeout is not None else None,
        )

    def _timeout_for(self, client: Any) -> Any:
        # What build_request puts in the extensions when none is given: the client's.
        return self._timeout if self._timeout is not None else client.timeout.as_dict()


def _same(one: Any, other: Any) -> bool:
    return bool(
        one.method == other.method
        and one.url == other.url
        and one.headers.raw == other.headers.raw
        and one.extensions == other.extensions
        and one.read() == other.read()
    )


def utf8_json(content_type: str, default_encoding: Any) -> bool:
    """Whether an answer of this content type (with the client's default
    encoding) is UTF-8 JSON for certain."""
    kind = content_type.replace(" ", "").lower()
    return kind in _UTF8_TYPES or (kind == "application/json" and default_encoding == "utf-8")


def utf8_text(response: Any) -> str | None:
    """`response.text` when the answer is UTF-8 JSON for certain; None otherwise."""
    kind = response.headers.get("content-type", "")
    if not utf8_json(kind, getattr(response, "default_encoding", None)):
        return None
    try:
        return str(response.content.decode("utf-8"))
    except UnicodeDecodeError:  # httpx would put replacement characters in: its text
        return None
