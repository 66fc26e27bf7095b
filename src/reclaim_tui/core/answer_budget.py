"""The bytes of API answers a pass holds at once, across its concurrent polls.

A pass fetches a round of answers with its concurrency, then stores and
delivers them a group at a time; until an answer's group is stored and
released, the answer is held. `AnswerBudget` counts those bytes (an answer's
declared length before its body is read, else its body as it is read) and
refuses an answer that would take the total past the limit while other
answers are held: that poll is deferred, its answer left unread (a GET
changes nothing at the API), and the row is polled again once the held
answers are released. One answer alone is always taken, whatever its size,
so a round always makes progress.

The reading side (the fast path's GET) asks through `take`, which finds the
budget and the row in a context variable the pass sets around each poll;
outside a pass, or on the SDK's stock path, nothing is counted or deferred.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable

__all__ = ["AnswerBudget", "AnswerDeferred", "polling_under", "take"]


class AnswerDeferred(Exception):
    """A poll whose answer was left unread: the answers already held fill the budget."""


class AnswerBudget:
    """Bytes of answers held, by row key, against a limit."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        #: the most bytes held at once
        self.peak = 0
        self._by_key: dict[str, int] = {}

    def take(self, key: str, size: int) -> bool:
        """Count `size` more bytes of `key`'s answer; False (and its bytes
        dropped) when others' answers are held and the total would pass the
        limit."""
        mine = self._by_key.get(key, 0)
        if self.held > mine and self.held + size > self.limit:
            self.release((key,))
            return False
        self._by_key[key] = mine + size
        self.held += size
        self.peak = max(self.peak, self.held)
        return True

    def release(self, keys: Iterable[str]) -> None:
        """These rows' answers are no longer held."""
        for key in keys:
            self.held -= self._by_key.pop(key, 0)


_POLL: contextvars.ContextVar[tuple[AnswerBudget, str] | None] = contextvars.ContextVar(
    "reclaim_tui_answer_budget", default=None
)


class polling_under:
    """Answers read inside this block (this task) are `key`'s, counted by
    `budget`. A class, not a `contextlib.contextmanager`: every poll enters
    one, and a generator's context manager is six Python calls to this's three."""

    __slots__ = ("_poll", "_token")

    def __init__(self, budget: AnswerBudget, key: str) -> None:
        self._poll = (budget, key)

    def __enter__(self) -> None:
        self._token = _POLL.set(self._poll)

    def __exit__(self, *exc: object) -> None:
        _POLL.reset(self._token)


def take(size: int) -> None:
    """Count `size` bytes of the answer being read; raise `AnswerDeferred`
    when the budget refuses them (the caller leaves the rest unread)."""
    poll = _POLL.get()
    if poll is not None and not poll[0].take(poll[1], size):
        raise AnswerDeferred("the answers held fill the pass's budget")
