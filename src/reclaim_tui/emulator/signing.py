"""Signing webhook deliveries, as Standard Webhooks and the real API do.

- Static webhooks: `webhook-signature: v1,<base64 HMAC-SHA256(secret,
  "{webhook-id}.{webhook-timestamp}.{body}")>`, one entry per secret still
  valid, space-separated (https://www.standardwebhooks.com/, made here with
  the `standardwebhooks` library itself). A secret is `whsec_` + base64 of
  32 random bytes.
- Dynamic webhooks (`webhook_config.uris`): the real API signs them with "a
  JWT checked against Google's published keys" (DESIGN.md §7); the claims it
  uses are not documented. The emulator sends a bare RS256 JWT signed with
  its own RSA key (made once per server, on first use), published as a JWKS
  at `/.well-known/jwks.json`. Its claims: `iss` (the emulator's base URL),
  `aud` (the destination URI), `iat`, `exp` (iat + 300), `sub` (the
  webhook-id) and `body_sha256` (hex SHA-256 of the body bytes): the last is
  the emulator's way to bind the token to the body.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from standardwebhooks import Webhook

__all__ = ["JWT_LIFETIME_SECONDS", "JwtSigner", "compact_json", "hmac_signature", "new_secret"]

JWT_LIFETIME_SECONDS = 300
_SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret: `whsec_` + base64 of 32 random bytes."""
    return _SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def hmac_signature(signing_secrets: Sequence[str], msg_id: str, timestamp: int, body: str) -> str:
    """The `webhook-signature` value: one `v1,…` per secret, space-separated."""
    at = datetime.fromtimestamp(timestamp, tz=UTC)
    return " ".join(
        Webhook(secret).sign(msg_id=msg_id, timestamp=at, data=body) for secret in signing_secrets
    )


class JwtSigner:
    """The emulator's RSA key: signs dynamic deliveries and publishes the JWKS."""

    def __init__(self) -> None:
        self._key: rsa.RSAPrivateKey | None = None
        self.kid = "emulator-" + secrets.token_hex(8)

    @property
    def key(self) -> rsa.RSAPrivateKey:
        # Made on first use: a 2048-bit key costs tens of milliseconds, and
        # most emulators (one per test) never sign a dynamic delivery.
        if self._key is None:
            self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return self._key

    def jwks(self) -> dict[str, Any]:
        """The public key as a JSON Web Key Set (RFC 7517)."""
        jwk = dict(RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True))
        jwk.update(kid=self.kid, alg="RS256", use="sig")
        return {"keys": [jwk]}

    def token(self, *, issuer: str, audience: str, msg_id: str, body: bytes, now: int) -> str:
        """A compact RS256 JWT for one attempt of one delivery."""
        claims = {
            "iss": issuer,
            "aud": audience,
            "iat": now,
            "exp": now + JWT_LIFETIME_SECONDS,
            "sub": msg_id,
            "body_sha256": hashlib.sha256(body).hexdigest(),
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})


def compact_json(value: Any) -> str:
    """The body as sent: compact JSON, UTF-8 (the signature covers exactly this text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
