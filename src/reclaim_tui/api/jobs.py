"""What the Python API hands back about a job: one frozen `Job`, read from
the ledger in one place (`job_from`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reclaim_tui.core.costs import PriceTable, cost_of
from reclaim_tui.core.models import (
    TERMINAL_STATUSES,
    Event,
    JobSpec,
    Row,
    Status,
    StoredResult,
)

__all__ = ["SETTLED", "Job", "Result", "Timeline", "job_from"]

#: The stored result of a finished job: its text, usage and raw interaction JSON.
Result = StoredResult
#: A job's history, oldest first: one `Event` per transition or note.
Timeline = tuple[Event, ...]

#: Statuses after which a job changes only by an operator's hand: its result is
#: stored (`done`, `consumed`) or it ended without one (`failed`, `cancelled`).
SETTLED = frozenset({Status.DONE, *TERMINAL_STATUSES})


@dataclass(frozen=True)
class Job:
    """One job as the ledger holds it now."""

    key: str
    status: Status
    spec: JobSpec
    #: the model or agent it runs on
    model: str
    #: the interaction id of its current attempt (None: not created yet)
    interaction_id: str | None
    attempts: int
    #: creates that may have been paid twice for this job (orphans resent)
    possible_duplicates: int
    last_error: str | None
    created_at: float
    updated_at: float
    #: the stored result (None until the job is `done`)
    result: Result | None
    #: USD from the stored usage and the price table; None when unknown
    #: (no result yet, or a model the table does not price)
    cost_usd: float | None
    timeline: Timeline = ()

    @property
    def settled(self) -> bool:
        """Its result is stored, or it ended without one."""
        return self.status in SETTLED

    @property
    def output_text(self) -> str | None:
        return self.result.output_text if self.result is not None else None


def job_from(
    row: Row,
    result: StoredResult | None,
    prices: PriceTable | None,
    events: Sequence[Event] = (),
) -> Job:
    cost = None
    if result is not None and prices is not None:
        cost = cost_of(result.usage, row.model, prices)
    return Job(
        key=row.idem,
        status=row.status,
        spec=row.job,
        model=row.model,
        interaction_id=row.handle,
        attempts=row.attempts,
        possible_duplicates=row.duplicates,
        last_error=row.last_error,
        created_at=row.created_at,
        updated_at=row.updated_at,
        result=result,
        cost_usd=cost,
        timeline=tuple(events),
    )
