"""Static webhooks, per project: the `/v1beta/webhooks` resources and their secrets.

Fields and values follow google-genai 3.3.0 (`_gaos/types/webhooks/`): a
`Webhook` has `id`, `name`, `uri`, `subscribed_events`, `state` (`enabled`,
`disabled`, `disabled_due_to_failed_deliveries`), `create_time`,
`update_time`, `signing_secrets` (truncated) and, on create only,
`new_signing_secret`. Ids, the truncated form and the error messages are not
documented: the emulator's choice.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reclaim_tui.emulator.errors import ApiProblem
from reclaim_tui.emulator.interaction import iso
from reclaim_tui.emulator.signing import new_secret
from reclaim_tui.emulator.webhook_settings import DAY_SECONDS

__all__ = [
    "DISABLED_BY_FAILURES",
    "SUBSCRIBABLE_EVENTS",
    "StaticWebhook",
    "WebhookRegistry",
]

#: The events a webhook may subscribe to (the SDK's `WebhookSubscribedEvent`).
SUBSCRIBABLE_EVENTS = frozenset(
    {
        "batch.succeeded",
        "batch.expired",
        "batch.failed",
        "interaction.requires_action",
        "interaction.completed",
        "interaction.failed",
        "video.generated",
    }
)
DISABLED_BY_FAILURES = "disabled_due_to_failed_deliveries"
_STATES = frozenset({"enabled", "disabled", DISABLED_BY_FAILURES})
_UPDATABLE = ("name", "state", "subscribed_events", "uri")
_REVOCATIONS = frozenset(
    {"revoke_previous_secrets_after_h24", "revoke_previous_secrets_immediately"}
)
_DEFAULT_PAGE_SIZE = 50
_MAX_PAGE_SIZE = 1000


@dataclass
class SigningSecret:
    secret: str
    #: When it stops signing (the store's clock); None: the current secret.
    expires_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        body = {"truncated_secret": self.secret[:10] + "..."}
        if self.expires_at is not None:
            body["expire_time"] = iso(self.expires_at)
        return body


@dataclass(eq=False)
class StaticWebhook:
    """One registered webhook; `secrets` newest first."""

    id: str
    uri: str
    subscribed_events: list[str]
    created_at: float
    name: str | None = None
    state: str = "enabled"
    updated_at: float = 0.0
    secrets: list[SigningSecret] = field(default_factory=list)
    failures_in_row: int = 0

    def signing_secrets(self, now: float) -> list[str]:
        """The secrets that sign a delivery now: the current one first."""
        return [s.secret for s in self.secrets if s.expires_at is None or now < s.expires_at]

    def to_json(self, now: float) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id}
        if self.name is not None:
            body["name"] = self.name
        body.update(
            uri=self.uri,
            subscribed_events=list(self.subscribed_events),
            state=self.state,
            create_time=iso(self.created_at),
            update_time=iso(self.updated_at or self.created_at),
            signing_secrets=[
                s.to_json() for s in self.secrets if s.expires_at is None or now < s.expires_at
            ],
        )
        return body


def _uri(value: Any) -> str:
    # The real API needs an HTTPS endpoint it can reach; the emulator also
    # takes http://, as its receivers are on loopback.
    if not isinstance(value, str) or not re.match(r"^https?://[^/\s]+", value):
        raise ApiProblem(400, f"uri must be an http(s) URL, got {value!r}")
    return value


def _events(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise ApiProblem(400, "subscribed_events must be a non-empty list of event types")
    unknown = [e for e in value if e not in SUBSCRIBABLE_EVENTS]
    if unknown:
        raise ApiProblem(400, f"unknown event types in subscribed_events: {unknown}")
    return list(dict.fromkeys(value))


def _name(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ApiProblem(400, "name must be a string")
    return value


def _mask(update_mask: str | None, body: Mapping[str, Any]) -> list[str]:
    if not update_mask:
        return [name for name in _UPDATABLE if name in body]
    # Field masks may be written camelCase (protobuf JSON) or snake_case.
    names = [re.sub(r"(?<!^)([A-Z])", r"_\1", n.strip()).lower() for n in update_mask.split(",")]
    unknown = [n for n in names if n not in _UPDATABLE]
    if unknown:
        raise ApiProblem(400, f"update_mask names fields that cannot be updated: {unknown}")
    return names


@dataclass
class WebhookRegistry:
    """Every static webhook of the (one) project the emulator serves."""

    clock: Callable[[], float] = time.time
    secret_overlap: float = DAY_SECONDS
    disable_after: int = 20
    webhooks: dict[str, StaticWebhook] = field(default_factory=dict)

    def create(self, body: Any, chosen_id: str | None = None) -> tuple[StaticWebhook, str]:
        """A new webhook and its signing secret (shown to the caller this once);
        `chosen_id`: the `?webhook_id=` the caller chose (the Batch API docs'
        REST example), else one is made."""
        if not isinstance(body, dict):
            raise ApiProblem(400, "the request body must be a Webhook object")
        if chosen_id is not None and chosen_id in self.webhooks:
            # AIP-133: a create naming an id that exists is ALREADY_EXISTS (409).
            raise ApiProblem(409, f"Webhook {chosen_id} already exists.")
        now = self.clock()
        secret = new_secret()
        webhook = StaticWebhook(
            id=chosen_id or "wh-" + secrets.token_hex(8),
            uri=_uri(body.get("uri")),
            subscribed_events=_events(body.get("subscribed_events")),
            name=_name(body.get("name")),
            created_at=now,
            updated_at=now,
            secrets=[SigningSecret(secret)],
        )
        self.webhooks[webhook.id] = webhook
        return webhook, secret

    def page(self, page_size: int | None, page_token: str | None) -> dict[str, Any]:
        """One page of the list, oldest first; the token is an offset."""
        size = min(page_size or _DEFAULT_PAGE_SIZE, _MAX_PAGE_SIZE)
        start = int(page_token) if page_token and page_token.isdigit() else 0
        every = list(self.webhooks.values())
        now = self.clock()
        body: dict[str, Any] = {"webhooks": [w.to_json(now) for w in every[start : start + size]]}
        if start + size < len(every):
            body["next_page_token"] = str(start + size)
        return body

    def get(self, webhook_id: str) -> StaticWebhook | None:
        return self.webhooks.get(webhook_id)

    def delete(self, webhook_id: str) -> bool:
        return self.webhooks.pop(webhook_id, None) is not None

    def update(self, webhook: StaticWebhook, body: Any, update_mask: str | None) -> None:
        if not isinstance(body, dict):
            raise ApiProblem(400, "the request body must be a WebhookUpdate object")
        names = _mask(update_mask, body)
        # Check everything before changing anything: a refused patch changes nothing.
        checked = {name: self._checked(name, body.get(name)) for name in names}
        for name, value in checked.items():
            setattr(webhook, name, value)
        if checked.get("state") == "enabled":
            webhook.failures_in_row = 0
        webhook.updated_at = self.clock()

    @staticmethod
    def _checked(name: str, value: Any) -> Any:
        if name == "uri":
            return _uri(value)
        if name == "subscribed_events":
            return _events(value)
        if name == "name":
            return _name(value)
        if value not in _STATES:
            raise ApiProblem(400, f"state must be one of {sorted(_STATES)}, got {value!r}")
        return str(value)

    def rotate(self, webhook: StaticWebhook, revocation_behavior: Any) -> str:
        """A new current secret; the previous ones stop signing now or after the overlap."""
        behavior = revocation_behavior or "revoke_previous_secrets_after_h24"
        if behavior not in _REVOCATIONS:
            raise ApiProblem(400, f"revocation_behavior must be one of {sorted(_REVOCATIONS)}")
        now = self.clock()
        at_once = behavior == "revoke_previous_secrets_immediately"
        ends = now if at_once else now + self.secret_overlap
        kept = [s for s in webhook.secrets if s.expires_at is None or now < s.expires_at]
        for old in kept:
            old.expires_at = ends if old.expires_at is None else min(old.expires_at, ends)
        secret = new_secret()
        webhook.secrets = [SigningSecret(secret), *(s for s in kept if now < (s.expires_at or 0))]
        webhook.updated_at = now
        return secret

    def listeners(self, event_type: str) -> list[StaticWebhook]:
        """The enabled webhooks subscribed to `event_type`."""
        return [
            w
            for w in self.webhooks.values()
            if w.state == "enabled" and event_type in w.subscribed_events
        ]

    def record(self, webhook_id: str, *, delivered: bool) -> None:
        """Count one attempt's outcome; too many failures in a row disable the webhook."""
        webhook = self.webhooks.get(webhook_id)
        if webhook is None:
            return
        if delivered:
            webhook.failures_in_row = 0
            return
        webhook.failures_in_row += 1
        if webhook.failures_in_row >= self.disable_after and webhook.state == "enabled":
            webhook.state = DISABLED_BY_FAILURES
            webhook.updated_at = self.clock()
