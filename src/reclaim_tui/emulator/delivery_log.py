"""What webhook delivery did: counters, per destination, and the recent records.

Read through `GET /_emulator/webhooks/deliveries` by tests and benchmarks.
Counter names:

- `events`: events that had at least one destination (an interaction's
  ending, a ping);
- `messages`: event × destination, each with its own `webhook-id`;
- `duplicates`: extra copies sent by the `duplicate_rate` fault (same id);
- `attempts`: POSTs tried, lost ones (`drop_rate`) included;
- `delivered`: attempts answered 2xx;
- `failed_attempts`: attempts answered non-2xx, timed out, refused or lost;
- `dropped_attempts`: the lost ones, also in `failed_attempts`;
- `given_up`: messages (copies included) abandoned: retries exhausted, or
  the static webhook deleted or disabled.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COUNTERS", "DeliveryLog", "Destination", "Message"]

COUNTERS = (
    "events",
    "messages",
    "duplicates",
    "attempts",
    "delivered",
    "failed_attempts",
    "dropped_attempts",
    "given_up",
)
_PER_DESTINATION = ("messages", "attempts", "delivered", "failed_attempts", "given_up")
#: How many attempt and message records are kept (the oldest go first).
_KEEP = 10_000


@dataclass(frozen=True)
class Destination:
    """Where a message goes: a URI, and the static webhook it belongs to (None: dynamic)."""

    uri: str
    webhook_id: str | None = None


@dataclass(eq=False)
class Message:
    """One event for one destination; its `msg_id` is the `webhook-id` of every attempt."""

    msg_id: str
    event_type: str
    interaction_id: str | None
    destination: Destination
    body: str
    #: When the event happened, on the event loop's clock (the retry window counts from it).
    born: float
    attempts: int = 0
    copy: bool = False


@dataclass
class DeliveryLog:
    counters: Counter[str] = field(default_factory=Counter)
    per_destination: dict[str, Counter[str]] = field(default_factory=dict)
    messages: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=_KEEP))
    attempts: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=_KEEP))

    def _count(self, message: Message, name: str) -> None:
        self.counters[name] += 1
        if name in _PER_DESTINATION:
            uri = message.destination.uri
            self.per_destination.setdefault(uri, Counter())[name] += 1

    def event(self) -> None:
        self.counters["events"] += 1

    def message(self, message: Message) -> None:
        self._count(message, "duplicates" if message.copy else "messages")
        self.messages.append(
            {
                "webhook_id": message.msg_id,
                "type": message.event_type,
                "interaction_id": message.interaction_id,
                "uri": message.destination.uri,
                "static_webhook": message.destination.webhook_id,
                "copy": message.copy,
            }
        )

    def attempt(self, message: Message, outcome: str, http_status: int | None) -> None:
        """One attempt: outcome `delivered`, `http_error`, `timeout`, `connection_error`
        or `dropped`."""
        self._count(message, "attempts")
        self._count(message, "delivered" if outcome == "delivered" else "failed_attempts")
        if outcome == "dropped":
            self._count(message, "dropped_attempts")
        self.attempts.append(
            {
                "webhook_id": message.msg_id,
                "type": message.event_type,
                "uri": message.destination.uri,
                "attempt": message.attempts,
                "outcome": outcome,
                "http_status": http_status,
                "at": time.time(),
            }
        )

    def given_up(self, message: Message, reason: str) -> None:
        self._count(message, "given_up")
        self.attempts.append(
            {
                "webhook_id": message.msg_id,
                "type": message.event_type,
                "uri": message.destination.uri,
                "attempt": message.attempts,
                "outcome": "given_up",
                "reason": reason,
                "at": time.time(),
            }
        )

    def to_json(self, pending: int) -> dict[str, Any]:
        counters = {name: self.counters[name] for name in COUNTERS}
        counters["pending"] = pending
        return {
            "counters": counters,
            "per_destination": {
                uri: {name: counts[name] for name in _PER_DESTINATION}
                for uri, counts in self.per_destination.items()
            },
            "messages": list(self.messages),
            "attempts": list(self.attempts),
        }

    def reset(self) -> None:
        self.counters.clear()
        self.per_destination.clear()
        self.messages.clear()
        self.attempts.clear()
