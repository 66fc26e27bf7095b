"""How many API calls a pass keeps in flight: adaptive by default.

The sweep over many in-flight jobs is bound by round trips: with slow
answers, 64 calls at a time sweep a thousand jobs several times faster than
16 (docs/performance.md) — but a user should not have to know that, and more
is not always faster (a server that slows down under load, a 429). So the
default starts at 16 and doubles while the API keeps up:

- after each window of `current` calls with no refusal, if the window's
  median latency is within `slack` × the first window's, the limit doubles
  (up to `ceiling`); a window that got slower keeps it where it is;
- a rate limit or capacity refusal (429, 503) halves it (down to `start`)
  and stops growth for the rest of the pass;
- the limit carries over to the next pass (the API's weather lasts).

An explicit `--concurrency N` is a fixed limit (start = ceiling = N), and
so is the default (16). Not the default, because more calls in flight is
more creates of unknown outcome when a process dies: the chaos soak (kills
every 0.5–2 s) exhausted the attempts of 3 jobs in 1,000 at up to 64.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AdaptiveLimit"]

#: Causes that say "too much": slow down (core/gemini/errors.py).
_BACK_OFF = ("rate_limit", "capacity")


@dataclass
class AdaptiveLimit:
    start: int = 16
    ceiling: int = 16
    slack: float = 1.5
    current: int = 0
    _baseline: float | None = None
    _window: list[float] = field(default_factory=list)
    _held: bool = False

    def __post_init__(self) -> None:
        self.ceiling = max(self.ceiling, self.start)
        self.current = self.current or self.start

    @property
    def adaptive(self) -> bool:
        return self.ceiling > self.start

    def begin_pass(self) -> None:
        self._window.clear()
        self._held = False

    def observe(self, seconds: float, cause: str | None) -> int:
        """Count one call (its latency, and the cause of its refusal if it
        was refused for a reason outside the job); the limit now."""
        if not self.adaptive:
            return self.current
        if cause in _BACK_OFF:
            self.current = max(self.start, self.current // 2)
            self._held = True
            self._window.clear()
            return self.current
        if self._held or self.current >= self.ceiling:
            return self.current
        self._window.append(seconds)
        if len(self._window) >= self.current:
            median = _median(self._window)
            self._window.clear()
            if self._baseline is None:
                self._baseline = median
            if median <= self.slack * self._baseline:
                self.current = min(self.ceiling, self.current * 2)
        return self.current


def _median(values: list[float]) -> float:
    """statistics.median, without importing it: it pulls in fractions and
    decimal, a noticeable part of every command's start-up."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
