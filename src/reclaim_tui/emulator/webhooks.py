"""Webhooks of the emulator: which events an interaction's ending sends, to whom,
and the tasks that send them (started and stopped with the application).

Destinations: the `webhook_config.uris` of the interaction's create when it
has any, else every enabled static webhook subscribed to the event. The
SDK's `WebhookConfig.uris`: "If set, these webhook URIs will be used for
webhook events instead of the registered webhooks" — so an interaction
with its own URIs is not sent to the static webhooks. Its
`webhook_config.user_metadata` travels in every event about it, static
deliveries included. Foreground interactions send events as well: they also
reach a status that has one.

The body is thin on purpose (the receiver GETs the interaction for its
result), compact JSON: `{"type", "version": "v1", "timestamp" (RFC 3339,
UTC), "data": {"id", "status", "user_metadata"?}}`.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from reclaim_tui.emulator.config import EmulatorConfig
from reclaim_tui.emulator.delivery import Dispatcher
from reclaim_tui.emulator.delivery_log import Destination, Message
from reclaim_tui.emulator.interaction import StoredInteraction, iso
from reclaim_tui.emulator.signing import JwtSigner, compact_json, hmac_signature
from reclaim_tui.emulator.state import InteractionStore
from reclaim_tui.emulator.webhook_registry import StaticWebhook, WebhookRegistry
from reclaim_tui.emulator.webhook_settings import DAY_SECONDS
from reclaim_tui.emulator.webhook_watch import EndingWatcher

__all__ = ["EVENT_FOR_STATUS", "PING_EVENT", "WebhookService"]

#: The event each ending sends. The public docs list only
#: interaction.completed, .failed and .requires_action: that `incomplete`
#: and `budget_exceeded` send `interaction.failed` is the emulator's
#: assumption. `cancelled` (and `requires_continuation`, which the SDK
#: continues by itself) send nothing: the docs list no such event.
EVENT_FOR_STATUS = {
    "completed": "interaction.completed",
    "failed": "interaction.failed",
    "incomplete": "interaction.failed",
    "budget_exceeded": "interaction.failed",
    "requires_action": "interaction.requires_action",
}
#: What `:ping` sends. Undocumented: the real API's ping event is not
#: described anywhere we could find; the name and `data` are the emulator's.
PING_EVENT = "webhook.ping"


def _webhook_config(interaction: StoredInteraction) -> tuple[list[str], dict[str, Any] | None]:
    config = interaction.request.echo.get("webhook_config")
    if not isinstance(config, dict):
        return [], None
    uris = [u for u in config.get("uris") or () if isinstance(u, str) and u]
    metadata = config.get("user_metadata")
    return uris, metadata if isinstance(metadata, dict) else None


class WebhookService:
    """Static webhooks, the ending watcher, the signer and the dispatcher of one app."""

    def __init__(self, config: EmulatorConfig, store: InteractionStore) -> None:
        settings = config.webhooks
        self.store = store
        self.registry = WebhookRegistry(
            clock=store.clock,
            secret_overlap=settings.secret_overlap,
            disable_after=settings.disable_after,
        )
        self.signer = JwtSigner()
        #: The `iss` of dynamic deliveries' JWTs: the emulator's base URL
        #: (set by EmulatorServer, or learnt from the first create's Host).
        self.issuer: str | None = None
        window = settings.retry_window
        self.dispatcher = Dispatcher(
            settings,
            retry_window=DAY_SECONDS * config.agent_time_scale if window is None else window,
            faults=lambda: store.faults.webhooks,
            seed=config.seed,
            sign=self._sign,
            abandon=self._abandon,
            outcome=self._outcome,
        )
        self.watcher = EndingWatcher(store, self._ended)
        store.on_change = self.watcher.track
        self._watching: asyncio.Task[None] | None = None

    # -- events ---------------------------------------------------------------------------
    def _ended(self, interaction: StoredInteraction, status: str, at: float) -> None:
        event_type = EVENT_FOR_STATUS.get(status)
        if event_type is None:
            return
        uris, metadata = _webhook_config(interaction)
        if uris:
            destinations = [Destination(uri) for uri in uris]
        else:
            listeners = self.registry.listeners(event_type)
            destinations = [Destination(w.uri, w.id) for w in listeners]
        data: dict[str, Any] = {"id": interaction.id, "status": status}
        if metadata is not None:
            data["user_metadata"] = metadata
        self._send(event_type, data, at, destinations, interaction.id)

    def ping(self, webhook: StaticWebhook) -> None:
        """Send the ping event to `webhook` (whatever its state)."""
        destination = Destination(webhook.uri, webhook.id)
        self._send(PING_EVENT, {"id": webhook.id}, self.store.clock(), [destination], None)

    def _send(
        self,
        event_type: str,
        data: dict[str, Any],
        at: float,
        destinations: list[Destination],
        interaction_id: str | None,
    ) -> None:
        if not destinations:
            return
        body = compact_json(
            {"type": event_type, "version": "v1", "timestamp": iso(at), "data": data}
        )
        self.dispatcher.log.event()
        born = time.monotonic()
        for destination in destinations:
            msg_id = "msg_" + secrets.token_hex(12)
            self.dispatcher.add(
                Message(msg_id, event_type, interaction_id, destination, body, born)
            )

    # -- the dispatcher's questions -------------------------------------------------------
    def _sign(self, message: Message, timestamp: int) -> str:
        webhook_id = message.destination.webhook_id
        if webhook_id is None:
            return self.signer.token(
                issuer=self.issuer or "",
                audience=message.destination.uri,
                msg_id=message.msg_id,
                body=message.body.encode("utf-8"),
                now=timestamp,
            )
        webhook = self.registry.get(webhook_id)
        keys = webhook.signing_secrets(self.store.clock()) if webhook is not None else []
        return hmac_signature(keys, message.msg_id, timestamp, message.body)

    def _abandon(self, message: Message) -> str | None:
        webhook_id = message.destination.webhook_id
        if webhook_id is None:
            return None
        webhook = self.registry.get(webhook_id)
        if webhook is None:
            return "the webhook was deleted"
        if webhook.state != "enabled" and message.event_type != PING_EVENT:
            return f"the webhook is {webhook.state}"
        return None

    def _outcome(self, message: Message, delivered: bool) -> None:
        if message.destination.webhook_id is not None:
            self.registry.record(message.destination.webhook_id, delivered=delivered)

    # -- lifetime -------------------------------------------------------------------------
    def learn_issuer(self, request: web.Request) -> None:
        if self.issuer is None:
            self.issuer = str(request.url.origin())

    def reset(self) -> None:
        """Forget static webhooks, queued messages and counts (`/_emulator/reset`)."""
        self.registry.webhooks.clear()
        self.dispatcher.reset()
        self.watcher.reset()

    async def start(self) -> None:
        await self.dispatcher.start()
        self._watching = asyncio.create_task(self.watcher.run(), name="emulator-webhook-watcher")

    async def stop(self) -> None:
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
            self._watching = None
        await self.dispatcher.stop()

    async def lifetime(self, app: web.Application) -> AsyncIterator[None]:
        """For `app.cleanup_ctx`: the tasks run while the application does."""
        await self.start()
        yield
        await self.stop()
