"""Keys typed right after `/` or `:` belong to the line that key opens.

Textual hands a key to the focused widget; the `/` binding runs later (the
key bubbles from the table to the screen to the app), and the filter's
focus comes later still (`focus()` is deferred). Keys that arrive in one
write — a paste without bracketing, a laggy link, a fast typist — were
forwarded to the table meanwhile and ran its actions (`/err`: `e` opened
$EDITOR, `r` retried a row). So the app asks `TypeAhead.hold` about each
key before routing it: `/` and `:` open their line at once, and every key
after them waits here until the line has the focus, then goes to it in
the order typed.

`PasteGuard` judges keys that come at once. An unbracketed paste of 20,000
characters reached the table as 20,000 action keys: it opened screens,
answered their confirmations with whatever letter came next, and froze the
console for minutes. So outside a text field (an Input or a
TextArea, which take every key however fast) every key waits here until no
key has come for `BURST_GAP` seconds, and the burst is judged whole: many
different keys in one burst are a paste and are ignored, said in one
notification; a short burst (a fast typist on a laggy link) or one key
repeated (a held `j`) is replayed in order.

The keys of one paste reach the app in pieces, with idles between them (the
terminal's reads, the input thread's posts), so the pieces are joined by the
time each key was made, not by what arrived before an idle. The terminal
parser hands over the last key of a read only at its next tick, about a
tenth of a second later: a key that comes within `PASTE_TAIL` of a paste's
last key is that paste's too. A typist's keys come tens of milliseconds
apart; a paste's, microseconds."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import App
from textual.widget import Widget

from reclaim_tui.tui.event_clock import event_time
from reclaim_tui.tui.widgets.textual_private import forward_key

__all__ = ["BURST_GAP", "PASTE_RUN", "PASTE_TAIL", "PasteGuard", "TypeAhead"]

#: How many refreshes the opened line may take to get the focus before the
#: held keys are dropped (it only fails to if the line was torn down).
_PATIENCE = 20
#: Keys in one burst beyond which a run of different keys is a paste, not typing.
PASTE_RUN = 16
#: Seconds without a key after which a burst is over: a paste's keys are made
#: microseconds apart, a typist's (or a held key's repeats) tens of ms.
BURST_GAP = 0.015
#: Seconds after a paste's last key within which a key still belongs to it.
PASTE_TAIL = 0.3


class TypeAhead:
    @property
    def active(self) -> bool:
        """A line was opened and the keys after it wait for its focus."""
        return self._target is not None

    def __init__(self, app: App[None], opener: Callable[[str], Widget | None]) -> None:
        #: Opens the line `key` opens and returns its input; None when the
        #: key opens nothing in the current view (it is then routed as usual).
        self._app, self._opener = app, opener
        self._target: Widget | None = None
        self._held: list[events.Key] = []
        self._tries = 0

    def hold(self, event: events.Key) -> bool:
        """True when the key was taken here (opened a line, or waits for it)."""
        if self._target is not None:
            self._held.append(event)
            return True
        target = self._opener(event.key)
        if target is None:
            return False
        self._target, self._tries = target, 0
        self._app.call_later(self._release)
        return True

    def _release(self) -> None:
        target = self._target
        if target is None:
            return
        if self._app.focused is not target and self._tries < _PATIENCE:
            self._tries += 1
            self._app.call_after_refresh(self._release)
            return
        held, self._held, self._target = self._held, [], None
        if self._app.focused is target:
            for key in held:
                forward_key(target, key)


class PasteGuard:
    """Holds the keys of a burst until it is over (see the module's text).

    `now` is the clock the keys' times are on (Textual's `Message.time`)."""

    def __init__(self, now: Callable[[], float] = event_time) -> None:
        self.now = now
        self._held: list[events.Key] = []
        self._paste_ended: float | None = None

    def hold(self, event: events.Key) -> None:
        self._held.append(event)

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def due_in(self) -> float:
        """Seconds until the burst held is over (0: judge it now)."""
        if not self._held:
            return 0.0
        return max(0.0, self._held[-1].time + BURST_GAP - self.now())

    def release(self) -> tuple[list[events.Key], int]:
        """The keys to route now, in order, and how many were ignored as a paste."""
        if self.due_in() > 0:
            return [], 0
        held, self._held = self._held, []
        if not held:
            return [], 0
        ended = self._paste_ended
        tail = ended is not None and held[0].time - ended <= PASTE_TAIL
        if tail or (len(held) > PASTE_RUN and len({key.key for key in held}) > 1):
            self._paste_ended = held[-1].time
            return [], len(held)
        return held, 0
