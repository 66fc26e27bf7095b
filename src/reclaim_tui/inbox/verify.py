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
- The keys are cached in the verifier: a known `kid` is checked on the
  event loop without a thread; an unknown one triggers one refresh at a
  time (on a thread of its own, at most every 30 s), and while a refresh
  hangs, deliveries signed by a known key are answered at once.

Every delivery must also carry a `webhook-timestamp` within `tolerance` of
the inbox's clock (injectable) — a replay of an old delivery is refused
even with a good signature. Any failure is a `Refused` with a reason that
names no secret and no body.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jwt
import standardwebhooks

from reclaim_tui.core.clock import Clock
from reclaim_tui.inbox import GOOGLE_JWKS_URL

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
    ) -> None:
        self.clock = clock
        self.tolerance = tolerance
        self.audience = audience
        self._hooks = [_hook(s) for s in secrets]
        self._keys = _KeyCache(jwks_url) if jwks_url else None
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
        key = await self._keys.key(kid, self.clock.now())
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


class _KeyCache:
    """The JWKS's keys by kid. A known kid is answered at once (a stale set
    is refreshed in the background); an unknown kid waits for one refresh —
    a single fetch at a time on a thread of its own, at most every
    `cooldown` seconds — and is refused if the set still lacks it."""

    def __init__(self, url: str, lifespan: float = 300.0, cooldown: float = 30.0) -> None:
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=5)
        self.lifespan, self.cooldown = lifespan, cooldown
        self.keys: dict[str, Any] = {}
        self.fetched_at = float("-inf")
        self._tried_at = float("-inf")
        self._refresh: asyncio.Task[None] | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jwks")

    async def key(self, kid: str, now: float) -> Any:
        if kid in self.keys:
            if now - self.fetched_at > self.lifespan:
                self._start(now)
            return self.keys[kid]
        if now - self._tried_at < self.cooldown and not self._running():
            raise Refused("bad-signature", "no key with this kid")
        task = self._start(now)
        try:
            await asyncio.wait_for(asyncio.shield(task), 10.0)
        except Exception as exc:  # the fetch failed or hangs: the sender retries
            raise Refused("jwks-unreachable", type(exc).__name__) from exc
        if kid not in self.keys:
            raise Refused("bad-signature", "no key with this kid")
        return self.keys[kid]

    def _running(self) -> bool:
        return self._refresh is not None and not self._refresh.done()

    def _start(self, now: float) -> asyncio.Task[None]:
        if self._refresh is None or self._refresh.done():
            self._tried_at = now
            self._refresh = asyncio.create_task(self._fetch(now))
            # Its failure is reported to whoever waits; none may be left waiting.
            self._refresh.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._refresh

    async def _fetch(self, now: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            found = await loop.run_in_executor(self._pool, self._client.get_jwk_set, True)
            keys = {k.key_id: k.key for k in found.keys if k.key_id}
        except Exception as exc:  # garbage, a 5xx, a timeout: nothing is trusted
            log.warning("inbox: the JWKS could not be read (%s)", type(exc).__name__)
            raise
        self.keys, self.fetched_at = keys, now


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
