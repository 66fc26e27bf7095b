"""Canonical JSON and idempotency keys."""

from __future__ import annotations

import hashlib
import re

from reclaim_tui.core.models import JobSpec

__all__ = ["KEY_PATTERN", "idempotency_key", "valid_key"]

# The key travels as a label value (≤ 63 chars, lowercase letters, digits,
# `_`, `-`) and names the sink's files, so the same rule keeps it out of
# path separators, dots and control characters.
KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


def valid_key(key: str) -> bool:
    return bool(KEY_PATTERN.fullmatch(key))


def idempotency_key(spec: JobSpec, canonical: str | None = None) -> str:
    """The job's key: its own if given, else sha256 of the canonical spec, 32 hex.
    `canonical`: `spec.to_json()`, when the caller has made it already."""
    if spec.key is not None:
        return spec.key
    text = spec.to_json() if canonical is None else canonical
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
