"""Where the Gemini API key comes from: the flag, else GEMINI_API_KEY, else
GOOGLE_API_KEY. Apart from the backend (core/gemini/backend.py re-exports it)
so that a command can ask whether it has a key without importing the backend's
stack (asyncio, an idle tick)."""

from __future__ import annotations

import os
import unicodedata

from reclaim_tui.errors import ConfigError

__all__ = ["check_api_key", "resolve_api_key"]


def resolve_api_key(flag_value: str | None) -> str | None:
    """The API key from the flag, else GEMINI_API_KEY, else GOOGLE_API_KEY;
    ConfigError (exit 2) for one no request could carry (`check_api_key`)."""
    for value in (flag_value, os.environ.get("GEMINI_API_KEY"), os.environ.get("GOOGLE_API_KEY")):
        if value:
            check_api_key(value)
            return value
    return None


_SPOKEN = {"\n": "a line feed", "\r": "a carriage return", "\t": "a tab", " ": "a space"}


def check_api_key(key: str) -> None:
    """Refuse a key that an HTTP header cannot carry: httpx refuses it on
    this machine at the first request, and the error it raises holds the key.
    The message says where and what the first bad character is, never the key."""
    for n, char in enumerate(key, start=1):
        if not ("!" <= char <= "~"):  # visible ASCII: what a header value may hold
            what = _SPOKEN.get(char) or unicodedata.name(char, f"U+{ord(char):04X}").lower()
            raise ConfigError(
                f"the API key has a character no HTTP request can carry ({what}, character"
                f" {n} of {len(key)}); check how it was set (a copied line break, a space)"
            )
