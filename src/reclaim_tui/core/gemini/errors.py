"""How SDK and transport exceptions become our `BackendError` tree, without the key.

    create                                  get / cancel
    401, 403, 400 "API key not valid"       404 → InteractionGoneError
      → NotCreatedError, cause "auth"       401/403/bad key → Transient, "auth"
    429 → NotCreatedError, "rate_limit"     429 → Transient, "rate_limit"
    other 4xx → NotCreatedError(False)      503 → Transient, "capacity"
    503 → MaybeCreatedError, "capacity"     408, 409, other 5xx → Transient, "server"
    408, 409, other 5xx → Maybe, "server"   timeouts, connection errors,
    connect error / connect or pool           bad JSON → Transient, "transport"
      timeout (nothing sent) → NotCreated,  other 4xx → PermanentReadError
      "transport"; a header httpx refuses
      here, a URL refused before sending
      (no host, not http/https) →
      NotCreated, "transport"
    read/write timeout, reset, protocol
      error, malformed 200 → MaybeCreatedError, "transport"

A `cause` marks a failure outside the job (errors.OUTSIDE_CAUSES): it never
spends the job's attempts nor fails it; the engine's circuit breaker counts
it. A 503 on create stays "maybe created": nothing in the answer proves the
API did not accept the request. Every message goes through a `Redactor`, so
the API key never reaches a row, a log line or a repr.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote, quote_plus

from reclaim_tui.errors import (
    BackendError,
    InteractionGoneError,
    MaybeCreatedError,
    NotCreatedError,
    PermanentReadError,
    TransientReadError,
)

__all__ = ["Redactor", "create_error", "read_error", "secret_forms"]

# httpx (or its fork httpx2, which google-genai 3.3 may use) exception names;
# matched by name so the mapping works with either package.
_NOT_SENT = frozenset({"ConnectError", "ConnectTimeout", "PoolTimeout", "UnsupportedProtocol"})
_TRANSPORT = frozenset({"TransportError", "TimeoutException", "NetworkError", "ProtocolError"})
# The aiohttp transport (httpx-aiohttp) turns aiohttp's connection errors into an
# httpx connect timeout, a connection lost after the request went out among them;
# its original exception stays in the chain. Only these come before the first
# byte: the connection could not be made (refused, DNS, TLS), or making it or
# waiting for a free one in the pool timed out; or the URL was refused while
# the request was being built, before a connection was sought (InvalidURL and
# its InvalidUrlClientError: no host, does not parse, a non-canonical IPv4
# address; NonHttpUrlClientError: a scheme other than http or https).
_AIOHTTP_NOT_SENT = frozenset(
    {"ClientConnectorError", "ConnectionTimeoutError", "InvalidURL", "NonHttpUrlClientError"}
)
# The redirect variants of the URL errors (InvalidUrlRedirectClientError,
# NonHttpUrlRedirectClientError) are raised on reading a redirect's Location:
# the request had gone out and been answered, so they never read as "not sent".
_AIOHTTP_ANSWERED = frozenset({"RedirectClientError"})


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for err in _chain(exc) for cls in type(err).__mro__}


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(exc, "status_code", None) or getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _told(exc: BaseException) -> BaseException:
    """The error to name in a transport failure's message: aiohttp's own under
    httpx-aiohttp's (which calls a lost connection a connect timeout), else `exc`."""
    for err in _chain(exc):
        if type(err).__module__.startswith("aiohttp"):
            return err
    return exc


def _not_sent(exc: BaseException) -> bool:
    """A transport error raised before any of the request was sent."""
    if any(type(err).__module__.startswith("aiohttp") for err in _chain(exc)):
        names = _names(exc)
        return bool(names & _AIOHTTP_NOT_SENT) and not names & _AIOHTTP_ANSWERED
    return bool(_names(exc) & _NOT_SENT) or _refused_here(exc)


def _is_transport(exc: BaseException) -> bool:
    names = _names(exc)
    return bool(names & (_TRANSPORT | _NOT_SENT)) or "APIConnectionError" in names


def _is_bad_key(exc: BaseException) -> bool:
    text = f"{exc} {getattr(exc, 'body', '')}"
    return "API_KEY_INVALID" in text or "API key not valid" in text


#: Parts of a key split at whitespace shorter than this are not hidden on
#: their own: hiding every "a" would garble the message, and no such part
#: is a usable key.
MIN_SECRET_PART = 6


def secret_forms(secret: str) -> list[str]:
    """Every spelling of `secret` an error message may hold, longest first:
    itself, its repr (str and bytes, as httpx and h11 quote a header), its
    JSON and percent-encoded forms, and the parts between its whitespace."""
    if not secret:
        return []
    parts = [p for p in secret.split() if len(p) >= MIN_SECRET_PART]
    forms: set[str] = set()
    for text in (secret, *parts):
        raw = text.encode("utf-8", "surrogateescape")
        forms |= {text, repr(text)[1:-1], repr(raw)[2:-1], json.dumps(text)[1:-1]}
        forms |= {quote(text, safe=""), quote_plus(text), quote(text)}
    return sorted(forms, key=len, reverse=True)


class Redactor:
    """Builds error messages that never contain the API key, in any form."""

    def __init__(self, secret: str) -> None:
        self._forms = secret_forms(secret)

    def hide(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, "***")
        return text

    def __call__(self, what: str, exc: BaseException) -> str:
        detail = self.hide(_api_message(exc) or str(exc) or type(exc).__name__)
        return f"{what}: {type(exc).__name__}: {_shorten(detail, 300)}"


def _refused_here(exc: BaseException) -> bool:
    """httpx refused to build the request's headers on this machine (h11's
    "Illegal header value/name", raised before the first byte is written):
    nothing was sent. Other local protocol errors may come after the
    headers went out, so they stay "maybe"."""
    return any(
        "LocalProtocolError" in {c.__name__ for c in type(err).__mro__}
        and str(err).startswith(("Illegal header", "Header value", "Header name"))
        for err in _chain(exc)
    )


def _api_message(exc: BaseException) -> str | None:
    """The API's own words from an error body ({"error": {"status", "message"}}),
    instead of the SDK's repr of the whole dict."""
    for err in _chain(exc):
        body = getattr(err, "body", None)
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            status = error.get("status") or error.get("code")
            return f"{status}: {error['message']}" if status else error["message"]
    return None


def _shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return f"{cut} …"


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a Retry-After header (delta-seconds form), if any."""
    for err in _chain(exc):
        response = getattr(err, "response", None)
        headers = getattr(response, "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if value is None:
            continue
        try:
            return max(0.0, float(value))
        except ValueError:
            return None  # an HTTP date: rare from this API; fall back to our own backoff
    return None


def _status_cause(status: int, exc: BaseException) -> str | None:
    if status in (401, 403) or (status == 400 and _is_bad_key(exc)):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status == 503:
        return "capacity"
    if status in (408, 409) or status >= 500:
        return "server"
    return None


def create_error(exc: BaseException, say: Redactor) -> BackendError:
    status = _http_status(exc)
    if status is not None and status >= 400:
        message = say(f"create answered HTTP {status}", exc)
        cause = _status_cause(status, exc)
        wait = _retry_after(exc)
        if cause in ("auth", "rate_limit"):
            return NotCreatedError(message, status, retryable=True, cause=cause, retry_after=wait)
        if cause is not None:
            return MaybeCreatedError(message, status, cause=cause, retry_after=wait)
        return NotCreatedError(message, status, retryable=False)
    if _is_transport(exc):
        if _not_sent(exc):
            message = say("create was not sent", _told(exc))
            return NotCreatedError(message, retryable=True, cause="transport")
        message = say("create sent, no usable answer", _told(exc))
        return MaybeCreatedError(message, cause="transport")
    if isinstance(exc, (TypeError, ValueError)) and status is None:
        # Raised by the SDK while building the request: nothing was sent.
        return NotCreatedError(say("create request rejected by the SDK", exc), retryable=False)
    return MaybeCreatedError(say("create outcome unknown", exc), status)


def read_error(what: str, exc: BaseException, say: Redactor) -> BackendError:
    status = _http_status(exc)
    if status is not None and status >= 400:
        message = say(f"{what} answered HTTP {status}", exc)
        if status == 404:
            return InteractionGoneError(message, status)
        cause = _status_cause(status, exc)
        if cause is not None:
            return TransientReadError(message, status, cause=cause, retry_after=_retry_after(exc))
        return PermanentReadError(message, status)
    return TransientReadError(say(f"{what} failed", _told(exc)), status, cause="transport")
