"""A small synchronous client of the emulator's admin API (`/_emulator/`).

For scripts that drive a running `reclaim-tui emulator` (faults, stats, the
create log, webhook deliveries); the tests and the benchmarks share it.

It stays on urllib, not the aiohttp the product uses: its callers are
synchronous (a test's body, a benchmark's driver, a shell script), and an
aiohttp call would need an event loop of its own per call or a thread; a
request here is one blocking round trip with nothing to keep between them.
The product's own client of the admin API (core/gemini/finder.py, inside
the engine's loop) is aiohttp's.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

__all__ = ["AdminClient"]


class AdminClient:
    """`/_emulator/…` of the emulator at `base_url` (no API key needed)."""

    def __init__(self, base_url: str, timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base_url}/_emulator/{path}",
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            return json.loads(response.read())

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
        result: list[dict[str, Any]] = self.call("GET", f"find?idem={urllib.parse.quote(idem)}")
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
