"""Static webhooks over the SDK (`client.aio.webhooks`): what
`reclaim-tui webhooks create|list|delete|ping` runs. A static webhook gets
every subscribed event of the project, signed with its `whsec_…` secret,
which the API returns once, at create (the inbox needs it: `--secret`)."""

from __future__ import annotations

from typing import Any

from reclaim_tui.core.gemini.backend import EMULATOR_DEFAULT_KEY
from reclaim_tui.core.gemini.errors import Redactor
from reclaim_tui.errors import BackendError, ConfigError

__all__ = ["INTERACTION_EVENTS", "WebhookAdmin"]

#: The events a reclaim inbox wants (the API has no "cancelled" event).
INTERACTION_EVENTS = (
    "interaction.completed",
    "interaction.failed",
    "interaction.requires_action",
)


class WebhookAdmin:
    def __init__(self, api_key: str | None, base_url: str | None = None) -> None:
        if not api_key:
            if base_url is None:
                raise ConfigError(
                    "no Gemini API key: pass --api-key or set GEMINI_API_KEY (or GOOGLE_API_KEY)"
                )
            api_key = EMULATOR_DEFAULT_KEY
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=base_url.rstrip("/") if base_url else None)
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._say = Redactor(api_key)

    async def create(self, uri: str, name: str | None, events: tuple[str, ...]) -> dict[str, Any]:
        return await self._call(
            "create",
            self._client.aio.webhooks.create(
                uri=uri,
                name=name,
                subscribed_events=list(events),  # type: ignore[arg-type]
            ),
        )

    async def list(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await self._call("list", self._client.aio.webhooks.list(page_token=token))
            found += page.get("webhooks") or []
            token = page.get("next_page_token")
            if not token:
                return found

    async def delete(self, webhook_id: str) -> None:
        await self._call("delete", self._client.aio.webhooks.delete(webhook_id))

    async def ping(self, webhook_id: str) -> dict[str, Any]:
        return await self._call("ping", self._client.aio.webhooks.ping(webhook_id))

    async def _call(self, what: str, call: Any) -> dict[str, Any]:
        try:
            out = await call
        except Exception as exc:
            raise BackendError(self._say(f"webhooks {what}", exc)) from exc
        if out is None:
            return {}
        dumped: dict[str, Any] = out.model_dump(mode="json", exclude_none=True)
        return dumped

    async def aclose(self) -> None:
        try:
            await self._client.aio.aclose()
        except Exception:  # closing is best effort
            pass
