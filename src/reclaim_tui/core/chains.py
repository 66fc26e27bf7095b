"""Jobs that continue one another (`previous`, another job's key): the
chains that come back to themselves, and an order in which each job
follows the job it continues."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.models import JobSpec

__all__ = ["chain_cycles", "chain_order", "cycle_text"]


def chain_cycles(
    previous_of: Mapping[str, str | None], starts: Iterable[str]
) -> dict[str, list[str]]:
    """The keys among `starts` whose `previous` chain comes back to them, each
    with its cycle (`[k, …, k]`). `previous_of` maps a key to the key it
    continues (None, or absent: the chain ends there). Such a job waits for
    itself: it can never be sent."""
    found: dict[str, list[str]] = {}
    for start in starts:
        path = [start]
        at = previous_of.get(start)
        while at is not None and at not in path:
            path.append(at)
            at = previous_of.get(at)
        if at == start:
            found[start] = [*path, start]
    return found


def chain_order(jobs: Sequence[JobSpec]) -> list[JobSpec]:
    """`jobs` in their order, except that a job naming another of them as its
    `previous` comes after it: reserved a part at a time, each part's
    `previous` keys are then in the ledger already (a job whose `previous`
    is not is refused)."""
    if all([job.previous is None for job in jobs]):
        return list(jobs)  # no chain: no key to hash (the console's loop runs this)
    first: dict[str, int] = {}
    for number, job in enumerate(jobs):
        first.setdefault(idempotency_key(job), number)
    placed = [False] * len(jobs)
    ordered: list[JobSpec] = []
    for start in range(len(jobs)):
        # Walk back through the jobs not placed yet; each is walked once.
        chain: dict[int, None] = {}  # in walk order; a cycle stops the walk
        at: int | None = start
        while at is not None and not placed[at] and at not in chain:
            chain[at] = None
            previous = jobs[at].previous
            at = first.get(previous) if previous is not None else None
        for walked in reversed(chain):
            placed[walked] = True
            ordered.append(jobs[walked])
    return ordered


def cycle_text(cycle: Sequence[str]) -> str:
    """A refusal's words for one cycle of `previous` keys."""
    if len(cycle) == 2:
        return (
            f"job {cycle[0]!r} names itself as its 'previous': it would wait for itself, never run"
        )
    chain = " → ".join(repr(k) for k in cycle)
    return f"'previous' chain {chain} is a cycle: its jobs would wait for each other, never run"
