"""The webhook inbox: an HTTP receiver that keeps verified deliveries in the
ledger (server.py, verify.py; the ledger side is core/ledger/inbox.py). Only
constants here, so the CLI can name its defaults without importing aiohttp,
PyJWT or standardwebhooks."""

__all__ = ["DEFAULT_PATH", "GOOGLE_JWKS_URL"]

#: The path the inbox serves (it also accepts POSTs to "/").
DEFAULT_PATH = "/webhooks/gemini"
#: Where Google publishes the keys that sign dynamic webhooks' JWTs.
GOOGLE_JWKS_URL = "https://generativelanguage.googleapis.com/.well-known/jwks.json"
