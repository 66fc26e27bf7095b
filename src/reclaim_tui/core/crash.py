"""Named crash points for the reliability tests.

`RECLAIM_CRASH_AT=name` (or `name:N`, the N-th time that point is reached)
makes the process SIGKILL itself there: no cleanup, no flush, exactly like a
power cut or an OOM kill between two lines. Unset, a crash point costs one
dict lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

__all__ = ["CRASH_POINTS", "PRUNE_CRASH_POINTS", "crashpoint"]

CRASH_POINTS = (
    "after_reserve_commit",
    "before_create",
    "after_create_before_handle",
    "after_handle_commit",
    "after_fetch_before_done",
    "after_done_before_sink",
    "inside_sink",
    "after_sink_before_consumed",
)
#: Outside a pass (the crash sweep drives passes only): `prune` between its
#: archive's fsync and the delete's commit (tests/unit/test_prune.py and
#: tests/e2e/test_cli_json_prune.py kill it there).
PRUNE_CRASH_POINTS = ("after_archive_before_delete",)

_hits: Counter[str] = Counter()


def _target() -> tuple[str, int] | None:
    spec = os.environ.get("RECLAIM_CRASH_AT")
    if not spec:
        return None
    name, _, nth = spec.partition(":")
    return name, int(nth) if nth.isdigit() else 1


def crashpoint(name: str) -> None:
    target = _target()
    if target is None or target[0] != name:
        return
    _hits[name] += 1
    if _hits[name] >= target[1]:
        os.kill(os.getpid(), signal.SIGKILL)
