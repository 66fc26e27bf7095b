"""Is this delivery from the API? Standard Webhooks headers, two signatures.

- Static webhooks (`reclaim-tui webhooks create`): `webhook-signature` is
  `v1,<base64 HMAC-SHA256>` over `id.timestamp.body` with the webhook's
  `whsec_…` secret — several, space-separated, during a rotation. Checked by
  the `standardwebhooks` library, against every secret given.
- Dynamic webhooks (`webhook_config` on a create): the header is an RS256
  JWT signed by the API, checked with PyJWT against the keys at a JWKS URL
  (Google publishes https://generativelanguage.googleapis.com/.well-known/jwks.json).
  The real API's claims are not documented: `exp` is required; `aud` is
  checked when an audience is configured; `iat` must fall in the timestamp
  window when present; a `sub` claim must equal the `webhook-id` and a
  `body_sha256` claim the body's digest when they are present (the emulator
  sets both, binding the token to one delivery). A token that binds neither
  is bound here to the first delivery it came with (its id and body digest,
  remembered until the token expires): a replay under another id or with
  another body is refused. That memory is per process; what a replay after
  a restart could still do is bounded by the engine, which adopts nothing
  on an event's word alone (it `get`s the interaction and checks its label).
- The keys are cached (jwks.py): a known `kid` is checked at once; an
  unknown one triggers one refresh at a time (fetched with aiohttp on the
  inbox's event loop, at most every 30 s, given up after `jwks_timeout`),
  and while a refresh hangs, deliveries signed by a known key, and every
  HMAC-signed one, are answered at once.

Every delivery must also carry a `webhook-timestamp` within `tolerance` of
the inbox's clock (injectable) — a replay of an old delivery is refused
even with a good signature. Any failure is a `Refused` with a reason that
names no secret and no body.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jwt
import standardwebhooks

from reclaim_tui.core.clock import Clock
from reclaim_tui.inbox import GOOGLE_JWKS_URL
from reclaim_tui.inbox.jwks import JwksUnreachable, KeyCache

__all__ = ["GOOGLE_JWKS_URL", "Refused", "Verified", "Verifier"]

log = logging.getLogger("reclaim_tui.inbox")
#: Standard Webhooks' recommended window for `webhook-timestamp` (seconds).
TOLERANCE = 300.0


class Refused(Exception):
    """The delivery is not trusted; `reason` is safe to log (a short code)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Verified:
    webhook_id: str
    timestamp: float
    signed_by: str  # "hmac" | "jwt"


class Verifier:
    """Checks deliveries against static secrets and a JWKS; `clock` judges staleness."""

    def __init__(
        self,
        clock: Clock,
        secrets: Sequence[str] = (),
        jwks_url: str | None = GOOGLE_JWKS_URL,
        audience: str | None = None,
        tolerance: float = TOLERANCE,
        jwks_timeout: float = 5.0,
    ) -> None:
        self.clock = clock
        self.tolerance = tolerance
        self.audience = audience
        self._hooks = [_hook(s) for s in secrets]
        self._keys = KeyCache(jwks_url, timeout=jwks_timeout) if jwks_url else None
        #: unbound tokens' first delivery: signature → (webhook-id, body digest, exp)
        self._bound: dict[str, tuple[str, str, float]] = {}

    async def verify(self, headers: Mapping[str, str], body: bytes) -> Verified:
        """The delivery's id, time and signer; `Refused` otherwise."""
        wid, stamp, signature = _headers(headers)
        at = _timestamp(stamp)
        skew = self.clock.now() - at
        if abs(skew) > self.tolerance:
            raise Refused("stale", f"timestamp {skew:+.0f}s from the inbox's clock")
        if _looks_like_jwt(signature):
            await self._check_jwt(signature, wid, body)
            return Verified(wid, at, "jwt")
        self._check_hmac({"webhook-id": wid, "webhook-timestamp": stamp}, signature, body)
        return Verified(wid, at, "hmac")

    async def aclose(self) -> None:
        """Stop a key refresh in flight (the inbox is stopping)."""
        if self._keys is not None:
            await self._keys.aclose()

    def _check_hmac(self, headers: dict[str, str], signature: str, body: bytes) -> None:
        if not self._hooks:
            raise Refused("no-secret", "an HMAC-signed delivery, and no --secret was given")
        try:
            text = body.decode()
        except UnicodeDecodeError as exc:
            raise Refused("bad-body", "not UTF-8") from exc
        full = {**headers, "webhook-signature": signature}
        for hook in self._hooks:
            try:
                hook.verify(text, full, json_parse=False)
                return
            except Exception:  # the library's error, or a malformed header it chokes on
                continue
        raise Refused("bad-signature", "no secret matches")

    async def _check_jwt(self, token: str, wid: str, body: bytes) -> None:
        if self._keys is None:
            raise Refused("no-jwks", "a JWT-signed delivery, and no --jwks-url")
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError as exc:
            raise Refused("bad-signature", "not a JWT") from exc
        if not isinstance(kid, str) or not kid or len(kid) > 256:
            raise Refused("bad-signature", "no usable kid")
        try:
            key = await self._keys.key(kid, self.clock.now())
        except JwksUnreachable as exc:
            raise Refused("jwks-unreachable", str(exc)) from exc
        if key is None:
            raise Refused("bad-signature", "no key with this kid")
        claims = self._decode(token, key)
        iat = claims.get("iat")
        if isinstance(iat, int | float) and abs(self.clock.now() - iat) > self.tolerance:
            raise Refused("stale", "the token was issued outside the window")
        sub = claims.get("sub")
        if sub is not None and sub != wid:
            raise Refused("bad-signature", "the token was issued for another delivery")
        actual = hashlib.sha256(body).hexdigest()
        digest = claims.get("body_sha256")
        if digest is not None:
            if not (isinstance(digest, str) and hmac.compare_digest(digest, actual)):
                raise Refused("bad-signature", "the token was issued for another body")
        if sub is None and digest is None:
            self._bind(token, wid, actual, claims)

    def _bind(self, token: str, wid: str, digest: str, claims: dict[str, Any]) -> None:
        """An unbound token serves the delivery it first came with, only."""
        now = self.clock.now()
        if len(self._bound) > 100_000:
            self._bound = {t: v for t, v in self._bound.items() if v[2] > now}
        signature = token.rsplit(".", 1)[-1]
        first = self._bound.get(signature)
        if first is not None and (first[0], first[1]) != (wid, digest):
            raise Refused("token-reused", "an unbound token seen with another delivery")
        expires = float(claims.get("exp", now + self.tolerance))
        self._bound[signature] = (wid, digest, expires)

    def _decode(self, token: str, key: Any) -> dict[str, Any]:
        options: dict[str, Any] = {"require": ["exp"], "verify_aud": self.audience is not None}
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=["RS256"],
                audience=self.audience,
                options=options,  # type: ignore[arg-type]
            )
        except jwt.ExpiredSignatureError as exc:
            raise Refused("stale", "the token has expired") from exc
        except jwt.PyJWTError as exc:
            raise Refused("bad-signature", type(exc).__name__) from exc
        return claims


def _hook(secret: str) -> standardwebhooks.Webhook:
    try:
        return standardwebhooks.Webhook(secret)
    except Exception as exc:
        raise ValueError("a webhook secret must be whsec_ followed by base64") from exc


def _headers(headers: Mapping[str, str]) -> tuple[str, str, str]:
    lower = {k.lower(): v for k, v in headers.items()}
    wid = lower.get("webhook-id", "").strip()
    stamp = lower.get("webhook-timestamp", "").strip()
    signature = lower.get("webhook-signature", "").strip()
    if not (wid and stamp and signature):
        raise Refused("missing-headers", "webhook-id, webhook-timestamp, webhook-signature")
    if len(wid) > 256 or len(signature) > 8192:
        raise Refused("bad-headers", "too long")
    return wid, stamp, signature


def _timestamp(stamp: str) -> float:
    if len(stamp) > 12:  # whole seconds until the year 33658
        raise Refused("bad-headers", "webhook-timestamp is too long")
    try:
        return float(int(stamp))
    except (ValueError, OverflowError) as exc:
        raise Refused("bad-headers", "webhook-timestamp is not whole seconds") from exc


def _looks_like_jwt(signature: str) -> bool:
    return "," not in signature and " " not in signature and signature.count(".") == 2
