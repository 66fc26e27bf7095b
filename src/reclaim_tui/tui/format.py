"""How the console prints keys, ages and times (pure functions)."""

from __future__ import annotations

import re
import time

from reclaim_tui.core.engine import cancelling
from reclaim_tui.core.ledger.inbox import InboxStats
from reclaim_tui.core.ledger.retention import Attention
from reclaim_tui.core.models import ACTIVE_STATUSES, Row

__all__ = [
    "age",
    "attention_text",
    "clock_time",
    "inbox_text",
    "next_poll",
    "short",
    "shorten_error",
    "timestamp",
]


def short(idem: str, width: int = 12) -> str:
    return idem if len(idem) <= width else idem[:width] + "…"


def age(seconds: float) -> str:
    """A compact duration: 42s, 7m12s, 3h04m, 2d05h."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def next_poll(row: Row, now: float) -> str:
    """When the loop will look at this row again ('' for rows it never will)."""
    if cancelling.is_pending(row):
        return cancelling.PENDING  # the loop asks the API to cancel it again
    if row.status not in ACTIVE_STATUSES:
        return ""
    if row.held:
        return "held"
    wait = row.next_at - now
    return "due" if wait <= 0 else "in " + age(wait)


def timestamp(at: float | None) -> str:
    """UTC, so every operator (and every snapshot) reads the same time."""
    if at is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


def clock_time(at: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(at))


#: The SDK's repr of an API error body: {'error': {'code': …, 'message': '…', 'status': '…'}}.
_API_BODY = re.compile(r"\{['\"]error['\"]:\s*\{.*", re.DOTALL)
# Each string form read by its own pattern, an escape and any other character
# apart: one way to read every input (a backslash is never "any character").
_API_MESSAGE = re.compile(
    r"['\"]message['\"]:\s*(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\")", re.DOTALL
)
_STATUS_WORD = re.compile(r"[A-Z][A-Z_]{3,}")
_API_STATUS = re.compile(r"['\"]status['\"]:\s*['\"]([A-Z_]+)['\"]")
#: The characters of an error the patterns read: a line shows far fewer, and
#: each pattern's work stays proportional to this whatever the ledger holds.
MAX_ERROR_SCANNED = 8192


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if text[limit - 1] != " " and space > limit // 2:
        cut = cut[:space]  # not inside a word
    return cut.rstrip(" :;,.-") + "…"


def shorten_error(message: str, limit: int) -> str:
    """One line of at most `limit` characters for an error: an SDK error body
    becomes the API's own status and words, and a message too long keeps its
    first part (the error's class) and its cause, cut at a word boundary."""
    text = " ".join(message[:MAX_ERROR_SCANNED].split())
    body = _API_BODY.search(text)
    if body is None:
        return _keep_cause(_os_error_parts(text.split(": ")), limit)
    found, status = _API_MESSAGE.search(body.group()), _API_STATUS.search(body.group())
    words = (found.group(1) or found.group(2) or "") if found else ""
    cause = ": ".join(x for x in (status.group(1) if status else "", words) if x)
    parts = [p for p in text[: body.start()].strip().rstrip(".").split(": ") if p]
    if parts and status and status.group(1) in parts[-1]:
        parts.pop()  # "400 INVALID_ARGUMENT" before the body says it again
    return _keep_cause([*parts, cause], limit)


#: An OSError's tail: its number, and the file's name it repeats.
_ERRNO = re.compile(r"^\[Errno \d+\] ")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _os_error_parts(parts: list[str]) -> list[str]:
    """'…: [Errno 20] Not a directory: '/a/b'' → '…: Not a directory': the
    cause is what the column keeps, not the file's name said again."""
    if len(parts) > 2 and _QUOTED.fullmatch(parts[-1]) and _ERRNO.match(parts[-2]):
        parts = parts[:-1]
    return [_ERRNO.sub("", p) for p in parts]


def _keep_cause(parts: list[str], limit: int) -> str:
    """'A: b: c: d' in `limit` characters: all of it, else the first part (the
    error's class) and as many of the last ones (the cause) as fit."""

    def without_middle(start: int) -> str:
        # The API's status word (RESOURCE_EXHAUSTED) is kept wherever it is.
        statuses = [p for p in parts[1:start] if _STATUS_WORD.fullmatch(p)]
        return ": ".join([parts[0], *statuses, *parts[start:]])

    for start in range(1, len(parts)):
        if len(kept := without_middle(start)) <= limit:
            return kept
    return _cut(without_middle(len(parts) - 1) if len(parts) > 1 else parts[0], limit)


def attention_text(seen: Attention) -> str:
    """The loop bar's warning: "3 past retention · 1 asking · 2 unknown status · 1 404 held"."""
    parts = [
        (seen.past_retention.count, "past retention"),
        (seen.asking, "asking"),
        (seen.plans_ready, "plan ready"),
        (seen.unknown_status, "unknown status"),
        (seen.not_found, "404 (polling)"),
        (seen.not_found_held, "404 held"),
    ]
    return " · ".join(f"{n:,} {what}" for n, what in parts if n)


def inbox_text(seen: InboxStats, now: float) -> str:
    """The loop bar's inbox part: "inbox 12/min · last 3s ago · 2 refused"."""
    last = f"last {age(now - seen.last_at)} ago" if seen.last_at is not None else "no event yet"
    refused = f" · {seen.refused:,} refused" if seen.refused else ""
    return f"inbox {seen.last_minute:,}/min · {last}{refused}"
