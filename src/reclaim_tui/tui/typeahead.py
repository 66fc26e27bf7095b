"""Keys typed right after `/` or `:` belong to the line that key opens.

Textual hands a key to the focused widget; the `/` binding runs later (the
key bubbles from the table to the screen to the app), and the filter's
focus comes later still (`focus()` is deferred). Keys that arrive in one
write — a paste without bracketing, a laggy link, a fast typist — were
forwarded to the table meanwhile and ran its actions (`/err`: `e` opened
$EDITOR, `r` retried a row). So the app asks `TypeAhead.hold` about each
key before routing it: `/` and `:` open their line at once, and every key
after them waits here until the line has the focus, then goes to it in
the order typed (issue 25, defect 1).

`PasteGuard` judges keys that come at once. An unbracketed paste of 20,000
characters reached the table as 20,000 action keys: it opened screens,
answered their confirmations with whatever letter came next, and froze the
console for minutes (issue 25, 8). So outside a text field (an Input or a
TextArea, which take every key however fast) every key waits
here until the app is idle (the keys read in one go are all processed: a
typist's keys each come alone, so they pass at once) and the run is
judged: a run of many different keys in one go is a paste and is ignored,
said in one notification; a short run (a fast typist on a laggy link) or
one key repeated (a held `j`) is replayed in order."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.app import App
from textual.widget import Widget

__all__ = ["PASTE_RUN", "PasteGuard", "TypeAhead"]

#: How many refreshes the opened line may take to get the focus before the
#: held keys are dropped (it only fails to if the line was torn down).
_PATIENCE = 20
#: Keys in one go beyond which a run of different keys is a paste, not typing.
PASTE_RUN = 16


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
                target._forward_event(key)


class PasteGuard:
    """Holds the keys that arrive between two idles (see the module's text)."""

    def __init__(self) -> None:
        self._held: list[events.Key] = []

    def hold(self, event: events.Key) -> None:
        self._held.append(event)

    def release(self) -> tuple[list[events.Key], int]:
        """The keys to route now, in order, and how many were ignored as a paste."""
        held, self._held = self._held, []
        if len(held) > PASTE_RUN and len({key.key for key in held}) > 1:
            return [], len(held)
        return held, 0
