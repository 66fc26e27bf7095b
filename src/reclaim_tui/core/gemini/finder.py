"""`EmulatorFinder`: the core's `LabelFinder` over the emulator's `/_emulator/find`.

The real Interactions API has no search, so only a backend pointed at the
emulator can find an orphan by its idem label; `bootstrap.make_backend` plugs
this in when `Settings.emulator_lookup` is on. Async (it runs inside the
engine's loop), unlike the scripts' synchronous `AdminClient`.

It is a client of the emulator's admin API over HTTP, as `GeminiBackend` is
of the Interactions API: it lives with the backend it serves and reads the
answer with the backend's own `interaction_from_json`, so the wiring never
imports the emulator and the emulator never imports the product.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from reclaim_tui.core.gemini.backend import interaction_from_json
from reclaim_tui.core.models import RemoteInteraction, labelled_attempt

__all__ = ["EmulatorFinder"]


class EmulatorFinder:
    """`find_by_label` through `GET {base_url}/_emulator/find?idem=…` (no API key needed)."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        # Made on first use: an aiohttp session belongs to the loop it was made in.
        self._session: aiohttp.ClientSession | None = None

    def __repr__(self) -> str:
        return f"EmulatorFinder({self.base_url})"

    async def find_by_label(
        self, idem: str, attempt: str | None = None
    ) -> RemoteInteraction | None:
        """The newest interaction the emulator holds with this idem label (and,
        given `attempt`, this attempt label), or None."""
        found = await self._find(idem)
        if attempt is not None:
            found = [item for item in found if labelled_attempt(item) == attempt]
        return interaction_from_json(found[-1]) if found else None

    async def _find(self, idem: str) -> list[dict[str, Any]]:
        if self._session is None:
            timeout = aiohttp.ClientTimeout(total=self.timeout)
            self._session = aiohttp.ClientSession(timeout=timeout)
        url = f"{self.base_url}/_emulator/find"
        async with self._session.get(url, params={"idem": idem}) as response:
            response.raise_for_status()
            body = await response.json()
        if not isinstance(body, list):
            raise ValueError("the emulator's find answer is not a list")
        return [item for item in body if isinstance(item, dict)]

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
