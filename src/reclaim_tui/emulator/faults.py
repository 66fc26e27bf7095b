"""Fault settings of the emulator and the seeded dice that apply them.

Every rate is a probability in [0, 1], rolled once per request on a
`random.Random(seed)`, so a run with the same seed and the same request order
injects the same faults.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

from reclaim_tui.emulator.webhook_settings import WebhookFaults

__all__ = ["DROP_MODES", "ENDING_RATES", "EndpointFaults", "FaultConfig", "FaultDice"]

#: How an accepted-then-dropped create is hidden from the client:
#: "disconnect" closes the connection without any response (httpx sees
#: RemoteProtocolError: the client cannot know); "503" stores the interaction
#: and still answers 503, like a gateway that lost the backend's answer.
DROP_MODES = ("disconnect", "503")
#: Rates of endings forced on an interaction at create time (script.OUTCOMES).
ENDING_RATES = (
    "incomplete_rate",
    "budget_exceeded_rate",
    "requires_action_rate",
    "continuation_rate",
)
_FIELDS = (
    "create",
    "get",
    "drop_rate",
    "drop_mode",
    "slow_rate",
    "slow_seconds",
    "fail_rate",
    *ENDING_RATES,
    "vanish_rate",
    "vanish_seconds",
    "queued_share",
    "webhooks",
)
_ERROR_RATES = ((429, "rate_429"), (500, "rate_500"), (503, "rate_503"))


def _rate(value: Any, name: str) -> float:
    rate = float(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{name} must be within [0, 1], got {rate}")
    return rate


def _queued(value: Any) -> float:
    share = float(value)
    if not 0.0 <= share < 1.0:
        raise ValueError(f"queued_share must be within [0, 1), got {share}")
    return share


@dataclass
class EndpointFaults:
    """Rates of injected error answers for one endpoint (create or get)."""

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_503: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> EndpointFaults:
        data = data or {}
        return cls(**{k: _rate(data.get(k, 0.0), k) for k in ("rate_429", "rate_500", "rate_503")})


@dataclass
class FaultConfig:
    """What goes wrong, and how often. Replaced whole by `POST /_emulator/faults`."""

    create: EndpointFaults = field(default_factory=EndpointFaults)
    get: EndpointFaults = field(default_factory=EndpointFaults)
    drop_rate: float = 0.0
    drop_mode: str = "disconnect"
    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    fail_rate: float = 0.0
    #: `incomplete` / `budget_exceeded`: the run stops half-way, with partial
    #: steps and usage. `requires_action`: it stops on a function call.
    #: `requires_continuation`: a foreground run stops at the decode limit with
    #: a continuation token (the SDK continues it by itself).
    incomplete_rate: float = 0.0
    budget_exceeded_rate: float = 0.0
    requires_action_rate: float = 0.0
    continuation_rate: float = 0.0
    #: Share of created interactions whose GET answers 404 for `vanish_seconds`
    #: after their create, then serves them again: once, the real
    #: API answered 404 to every GET of fresh background interactions of one
    #: agent for about two days, then recovered (python-genai#2985).
    vanish_rate: float = 0.0
    vanish_seconds: float = 0.0
    #: The first share of a background run spent `queued` (a recorded real
    #: run never showed `queued`: off unless asked for).
    queued_share: float = 0.0
    #: Faults of webhook delivery (webhook_settings.py).
    webhooks: WebhookFaults = field(default_factory=WebhookFaults)

    @classmethod
    def uniform(
        cls,
        *,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_503: float = 0.0,
        **rest: Any,
    ) -> FaultConfig:
        """The same error rates on create and get (what the CLI flags set)."""
        rates = {"rate_429": rate_429, "rate_500": rate_500, "rate_503": rate_503}
        return cls.from_json({"create": rates, "get": rates, **rest})

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaultConfig:
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown fault settings: {', '.join(sorted(unknown))}")
        drop_mode = str(data.get("drop_mode", "disconnect"))
        if drop_mode not in DROP_MODES:
            raise ValueError(f"drop_mode must be one of {DROP_MODES}")
        slow_seconds = float(data.get("slow_seconds", 0.0))
        if slow_seconds < 0:
            raise ValueError("slow_seconds must be >= 0")
        vanish_seconds = float(data.get("vanish_seconds", 0.0))
        if vanish_seconds < 0:
            raise ValueError("vanish_seconds must be >= 0")
        return cls(
            create=EndpointFaults.from_json(data.get("create")),
            get=EndpointFaults.from_json(data.get("get")),
            drop_rate=_rate(data.get("drop_rate", 0.0), "drop_rate"),
            drop_mode=drop_mode,
            slow_rate=_rate(data.get("slow_rate", 0.0), "slow_rate"),
            slow_seconds=slow_seconds,
            fail_rate=_rate(data.get("fail_rate", 0.0), "fail_rate"),
            vanish_rate=_rate(data.get("vanish_rate", 0.0), "vanish_rate"),
            vanish_seconds=vanish_seconds,
            queued_share=_queued(data.get("queued_share", 0.0)),
            webhooks=WebhookFaults.from_json(data.get("webhooks")),
            **{name: _rate(data.get(name, 0.0), name) for name in ENDING_RATES},
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class FaultDice:
    """A seeded random source; `roll(rate)` is True with probability `rate`."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def roll(self, rate: float) -> bool:
        # Zero rates draw nothing, so turning one fault on does not shift the
        # sequence seen by the others in a run that never used it.
        return rate > 0.0 and self._random.random() < rate

    def error_status(self, faults: EndpointFaults) -> int | None:
        """The injected HTTP status for one request, or None to answer normally."""
        for status, name in _ERROR_RATES:
            if self.roll(getattr(faults, name)):
                return status
        return None
