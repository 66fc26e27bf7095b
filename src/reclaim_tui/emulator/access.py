"""What every handler of the emulator reaches: the application's keys and the API-key check."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.errors import front_end_error
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.emulator.webhooks import WebhookService

__all__ = ["CONFIG_KEY", "STORE_KEY", "WEBHOOKS_KEY", "key_error"]

STORE_KEY: web.AppKey[InteractionStore] = web.AppKey("store", InteractionStore)
CONFIG_KEY: web.AppKey[EmulatorConfig] = web.AppKey("config", EmulatorConfig)
WEBHOOKS_KEY: web.AppKey[WebhookService] = web.AppKey("webhooks", WebhookService)


def key_error(request: web.Request) -> web.Response | None:
    """The front end's refusal of a missing or wrong API key, or None to go on."""
    expected = request.app[CONFIG_KEY].api_key
    if expected is None:
        return None
    given = request.headers.get("x-goog-api-key") or request.query.get("key")
    if not given:
        return front_end_error(
            403,
            "Method doesn't allow unregistered callers (callers without established identity)."
            " Please use API Key or other form of API consumer identity to call this API.",
        )
    if given != expected:
        # The real API answers a wrong key with 400 INVALID_ARGUMENT, not 401,
        # and names the reason in `details` (google.rpc.ErrorInfo).
        message = "API key not valid. Please pass a valid API key."
        details: list[dict[str, Any]] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": message,
            },
        ]
        return front_end_error(400, message, details=details)
    return None
