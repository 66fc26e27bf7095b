"""Python calls counted while a block runs (a profile hook, never a clock)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = ["python_calls"]


@contextmanager
def python_calls() -> Iterator[Counter[tuple[str, str]]]:
    """Python calls by (file name, function name) while the block runs."""
    seen: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            seen[(Path(code.co_filename).name, code.co_name)] += 1

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)
