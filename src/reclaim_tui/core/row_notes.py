"""What the engine writes at the start of a row's `last_error`, and the SQL
that picks rows by it: the vocabulary shared by the engine (which writes it)
and the ledger's reads (which count and show it). Kept below both rooms so
the ledger never imports the engine (docs/design.md, the map)."""

from __future__ import annotations

from reclaim_tui.core.models import Row, Status

__all__ = [
    "ASKS",
    "NOT_FOUND",
    "PENDING",
    "PENDING_SQL",
    "PLAN_READY",
    "UNKNOWN_STATUS",
    "is_pending",
]

#: How `last_error` starts on a row held because its interaction asks
#: something, and on one whose interaction reports a status this version does
#: not know; `status` and the console count rows by them (core/ledger/retention.py).
ASKS = "requires action: "
UNKNOWN_STATUS = "unknown API status "
#: How `last_error` starts on a row whose interaction answers 404 inside the
#: API's retention: "not found (404) since <ISO time>: …". A 404 there is no
#: proof of loss (the API once answered 404 for fresh interactions for two
#: days, then served them: python-genai#2985); the time the streak began
#: is kept in the text, so no schema change (core/engine/polling.py).
NOT_FOUND = "not found (404) since "
#: How `last_error` starts on a row whose interaction answered with a plan
#: (core/engine/planning.py).
PLAN_READY = "plan ready: "
#: A cancel the API has not confirmed yet (core/engine/cancelling.py).
PENDING = "cancel pending"
#: The rows whose remote cancel is to be asked again (with `next_at <= ?`).
PENDING_SQL = "status = 'cancelled' AND held = 1"


def is_pending(row: Row) -> bool:
    """The row is cancelled here but the API has not confirmed it yet."""
    return row.status == Status.CANCELLED and bool(row.held)
