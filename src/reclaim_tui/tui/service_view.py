"""What a console attached to a service (`console --attach`) shows of it:
the SERVICE's own state, never the console's.

The app asks the service for its state every `REFRESH` seconds over the
control socket (runner/control.py: `ServiceStatus`); `ServiceView` turns
each answer, or the failure to get one, into the loop bar's words and the
loop log's lines:

    up / paused / draining    as the service says, with its pass interval,
                              its API calls in flight and its last pass
                              (time and outcome, API ok or unavailable)
    gone                      the socket closed, the process dead, or no
                              answer within `ANSWER_WITHIN`: no interval,
                              no concurrency, no "API ok" (they would be stale)

The log says each change of state once (never a failure every refresh),
and what the service's passes did since the last look (from its totals:
the passes the console did not see are counted too). No I/O here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from reclaim_tui.core.models import PassReport
from reclaim_tui.runner.commands import ServiceState
from reclaim_tui.tui.format import clock_time
from reclaim_tui.tui.pace import INTERVALS
from reclaim_tui.tui.widgets.loop_bar import API_CALLS, NOT_TRIED

__all__ = ["ANSWER_WITHIN", "REFRESH", "LogLine", "ServiceView", "stepped"]

#: Seconds between two looks at the service's state.
REFRESH = 1.0
#: A service that does not answer a look in this many seconds is shown gone.
ANSWER_WITHIN = 5.0


@dataclass(frozen=True)
class LogLine:
    text: str
    error: bool = False


def stepped(interval: float, longer: bool) -> float:
    """The next pass interval `+` (longer) or `-` gives, as the console's own."""
    if longer:
        bigger = [i for i in INTERVALS if i > interval]
        return bigger[0] if bigger else INTERVALS[-1]
    smaller = [i for i in INTERVALS if i < interval]
    return smaller[-1] if smaller else INTERVALS[0]


@dataclass
class ServiceView:
    """The last thing the service said (None: nothing yet, or gone)."""

    state: ServiceState | None = None
    #: why the service is gone ("" while it answers)
    gone: str = ""
    #: the mode shown before the first answer
    mode: str = "attaching"
    _totals: Counter[str] | None = None
    _passes: int = 0
    _said: str = ""
    pending: list[LogLine] = field(default_factory=list)

    @property
    def paused(self) -> bool | None:
        return None if self.state is None else self.state.state == "paused"

    def seen(self, state: ServiceState) -> bool:
        """The service answered; True when it passed since the last look."""
        was, self.state, self.gone, self.mode = self.state, state, "", state.state
        word = f"service pid {state.pid}: {state.state}"
        if word != self._said:
            self._said = word
            back = " again" if was is None and self._totals is not None else ""
            self.pending.append(LogLine(f"{word}{back} · {self.pace_text()}"))
        totals = Counter(state.totals)
        if self._totals is None:  # the first look: what it did before this console came
            so_far = PassReport(Counter(totals)).summary() if totals else "nothing yet"
            self.pending.append(LogLine(f"service: {state.passes} passes so far: {so_far}"))
        passed = self._totals is not None and state.passes != self._passes
        if passed and self._totals is not None:
            done = totals - self._totals
            report = PassReport(done)
            if done:
                count = state.passes - self._passes
                passes = f"{count} passes" if count != 1 else "1 pass"
                self.pending.append(LogLine(f"service: {passes}: {report.summary()}"))
        self._totals, self._passes = totals, state.passes
        return passed

    def lost(self, why: str) -> None:
        """No answer: the service is gone (said once until it answers again)."""
        self.state, self.gone, self.mode = None, why or "no answer", "gone"
        if self._said != "gone":
            self._said = "gone"
            self.pending.append(LogLine(f"service gone: {self.gone}", error=True))

    def take_lines(self) -> list[LogLine]:
        lines, self.pending = self.pending, []
        return lines

    # -- the loop bar's words --------------------------------------------------------------
    def pace_text(self) -> str:
        s = self.state
        if s is None:
            return ""
        calls = f"concurrency {s.concurrency}"
        if s.max_concurrency is not None and s.max_concurrency != s.concurrency:
            calls = f"concurrency {s.concurrency}–{s.max_concurrency}"
        return f"a pass at least every {s.interval:g}s · {calls}"

    def calls_text(self) -> str:
        """The service's limit on API calls at once (not the calls in flight,
        which the service does not report)."""
        s = self.state
        if s is None:
            return ""
        if s.max_concurrency is not None and s.max_concurrency != s.concurrency:
            return f"concurrency {s.concurrency}–{s.max_concurrency}"
        return f"concurrency {s.concurrency}"

    def last_text(self) -> str:
        s = self.state
        if s is None:
            return f"service gone: {self.gone}" if self.gone else ""
        if s.last_pass_at is None:
            return "service: no pass yet"
        return f"service's last pass {clock_time(s.last_pass_at)}: {s.last_summary}"

    def api_text(self) -> str:
        s = self.state
        if s is None:
            return ""
        if s.last_unavailable:
            cause = s.last_unavailable[0]
            return f"unreachable ({cause})" if cause == "transport" else f"unavailable ({cause})"
        if s.last_pass_at is None or not any(s.totals.get(k) for k in API_CALLS):
            return NOT_TRIED
        return "ok"
