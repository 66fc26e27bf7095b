"""The answer both stand-ins of the Interactions API give a prompt.

The emulator (emulator/content.py) and the in-memory `FakeBackend`
(core/fakes.py) answer a plain model job with the same text, so a test
expects it from either. Neither room owns the rule: it sits here, beneath
both, and imports nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any

__all__ = ["fake_output_text"]


def fake_output_text(spec_input: Any) -> str:
    """Deterministic output derived from the input (same rule as the emulator)."""
    digest = hashlib.sha256(repr(spec_input).encode("utf-8")).hexdigest()[:12]
    return f"Result {digest} for: {str(spec_input)[:80]}"
