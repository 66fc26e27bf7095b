"""The rows a reclaim pass has polled, as its next claims must skip them.

A pass polls a row at most once: a row due again at once (a first poll of
0, an error's backoff already over) waits for the next pass, or one running
job would be polled for as long as it runs. Only a row a claim could take
again needs skipping, though: one still `submitted` and due. A row the pass
moved out of `submitted` cannot match a claim, and one whose next poll is
later than the claim's "now" cannot either; skipping every row the pass had
polled made each claim name all of them, a list that grew with the pass.

So the skip list holds the rows whose outcome is not written yet (the batch
in hand), those whose write did not apply (the row is no longer known) and
those still `submitted` whose next poll has come by the claim's "now".

That list trusts the next poll the pass wrote, and something else may move
it earlier while the pass runs (the inbox makes a row due when an event for
its interaction arrives; an operator's "poll now"). A claim that takes a
row the pass polled already is caught by `again`: the row is given back
and skipped from then on.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable

from reclaim_tui.core.models import Status, Transition

__all__ = ["PolledRows"]


class PolledRows:
    """What a reclaim pass polled, and which of it a claim must skip."""

    def __init__(self) -> None:
        #: claimed, outcome not written (or not applied): skipped at any time
        self._open: set[str] = set()
        #: still `submitted`, next poll in the future: (next_at, idem)
        self._later: list[tuple[float, str]] = []
        #: still `submitted` and due again: skipped for the rest of the pass
        self._due: set[str] = set()
        #: every row the pass polled (looked up, never sent to the ledger)
        self._seen: set[str] = set()

    def claimed(self, idems: Iterable[str]) -> None:
        """The pass took these rows to poll."""
        for idem in idems:
            self._open.add(idem)
            self._seen.add(idem)

    def given_back(self, idems: Collection[str]) -> None:
        """These rows were not polled after all (a deferred poll): a later
        claim of the pass may take them again."""
        self._open -= set(idems)
        self._seen -= set(idems)

    def again(self, idems: Iterable[str]) -> set[str]:
        """Those of `idems` (a claim's) the pass polled already, skipped
        from now on: their next poll was moved to within the pass."""
        seen = {idem for idem in idems if idem in self._seen}
        self._due |= seen
        return seen

    def written(self, transitions: Iterable[Transition], applied: Collection[str]) -> None:
        """The outcomes of polled rows were written; `applied` names those
        whose compare-and-set applied. A row whose write did not apply stays
        skipped: what the ledger holds of it is not known here."""
        for t in transitions:
            if t.idem not in self._open or t.idem not in applied:
                continue
            self._open.discard(t.idem)
            if t.to is not Status.SUBMITTED:
                continue  # out of `submitted`: no poll claim can take it
            next_at = t.changes.get("next_at")
            if next_at is None:
                self._due.add(t.idem)  # its due time unchanged: it was due
            else:
                heapq.heappush(self._later, (float(next_at), t.idem))

    def skipped(self, now: float) -> set[str]:
        """The rows a claim whose "due" rule reads `now` must skip."""
        later = self._later
        while later and later[0][0] <= now:
            self._due.add(heapq.heappop(later)[1])
        return self._open | self._due
