"""Where the Gemini API key comes from: the flag, else GEMINI_API_KEY, else
GOOGLE_API_KEY. Apart from the backend (core/gemini/backend.py re-exports it)
so that a command can ask whether it has a key without importing the backend's
stack (asyncio, an idle tick)."""

from __future__ import annotations

import os

__all__ = ["resolve_api_key"]


def resolve_api_key(flag_value: str | None) -> str | None:
    """The API key from the flag, else GEMINI_API_KEY, else GOOGLE_API_KEY."""
    for value in (flag_value, os.environ.get("GEMINI_API_KEY"), os.environ.get("GOOGLE_API_KEY")):
        if value:
            return value
    return None
