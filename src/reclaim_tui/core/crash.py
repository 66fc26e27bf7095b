"""Named crash points for the reliability tests.

`RECLAIM_CRASH_AT=name` (or `name:N`, the N-th time that point is reached)
makes the process SIGKILL itself there: no cleanup, no flush, exactly like a
power cut or an OOM kill between two lines. The variable is read once, when
the process first reaches a crash point (a forked child reads it again: its
environment may differ from its parent's); after that, a crash point costs
one comparison. The engine passes a few a job.
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
#: The target, once read (`_UNREAD` until the first crash point).
_UNREAD: tuple[str, int] = ("", 0)
_target: tuple[str, int] | None = _UNREAD


def _read_target() -> tuple[str, int] | None:
    spec = os.environ.get("RECLAIM_CRASH_AT")
    if not spec:
        return None
    name, _, nth = spec.partition(":")
    return name, int(nth) if nth.isdigit() else 1


def _forget_target() -> None:
    global _target
    _target = _UNREAD


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_target)


def crashpoint(name: str) -> None:
    global _target
    target = _target
    if target is _UNREAD:
        target = _target = _read_target()
    if target is None or target[0] != name:
        return
    _hits[name] += 1
    if _hits[name] >= target[1]:
        os.kill(os.getpid(), signal.SIGKILL)
