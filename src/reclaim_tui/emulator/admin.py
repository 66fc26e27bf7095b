"""A small synchronous client of the emulator's admin API (`/_emulator/`).

For scripts that drive a running `reclaim-tui emulator` (faults, stats, the
create log, webhook deliveries); the tests and the benchmarks share it.

Its HTTP client is httpx2's synchronous one, the client google-genai itself
depends on (it is installed wherever the product is): the tree keeps two HTTP
clients, aiohttp for our servers and everything on an event loop, httpx2 for
the SDK and for this. Not aiohttp, because the callers are synchronous (a
test's body, a benchmark's driver, a shell script): an aiohttp call would need
an event loop of its own per call, or a thread. A request is one blocking
round trip (`httpx2.request`), with nothing kept between them.

Every failure of the round trip — no answer, a timeout, an answer that is not
2xx — raises `AdminError`, an `OSError` as urllib's errors were, so callers
that catch `OSError` go on catching it; `status` is the HTTP status, if any
came. The product's own client of the admin API (core/gemini/finder.py, inside
the engine's loop) is aiohttp's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx2

__all__ = ["AdminClient", "AdminError"]


class AdminError(OSError):
    """The admin API could not be reached, or answered other than 2xx."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AdminClient:
    """`/_emulator/…` of the emulator at `base_url` (no API key needed)."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        url = f"{self.base_url}/_emulator/{path}"
        try:
            response = httpx2.request(method, url, json=body, timeout=self.timeout)
            response.raise_for_status()
        except httpx2.HTTPStatusError as exc:
            status = exc.response.status_code
            raise AdminError(f"{method} {url}: HTTP {status}", status) from exc
        except httpx2.HTTPError as exc:
            raise AdminError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc
        return response.json()

    def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("GET", "stats")
        return result

    def creates(self) -> list[dict[str, Any]]:
        """Every interaction the emulator created, in order (dropped ones too)."""
        result: list[dict[str, Any]] = self.call("GET", "creates")
        return result

    def set_faults(self, faults: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.call("POST", "faults", dict(faults))
        return result

    def find(self, idem: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.call("GET", f"find?idem={quote(idem)}")
        return result

    def finish(self, interaction_id: str, status: str, text: str | None = None) -> Any:
        body: dict[str, Any] = {"status": status}
        if text is not None:
            body["text"] = text
        return self.call("POST", f"interactions/{interaction_id}/finish", body)

    def webhook_deliveries(self) -> dict[str, Any]:
        """Webhook delivery counters, per destination, and the recent messages and attempts."""
        result: dict[str, Any] = self.call("GET", "webhooks/deliveries")
        return result

    def reset(self) -> Any:
        return self.call("POST", "reset")
