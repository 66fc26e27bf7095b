"""The clock Textual stamps its messages with (`Message.time`, so a key's
`time`): the monotonic clock, the performance counter on Windows. Read here
to compare with a key's stamp; tests/tui/test_textual_private.py checks
that a message's stamp falls between two readings of it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["event_time"]

#: Seconds on the clock of Textual's message stamps.
event_time: Callable[[], float] = time.perf_counter if sys.platform == "win32" else time.monotonic
