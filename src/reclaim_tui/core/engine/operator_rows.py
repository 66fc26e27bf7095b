"""An operator's compare-and-set on one row (the ledger's `operator_update`),
and the error that says why one did not apply: the row is in another status,
or a live process holds it. Shared by the operator's actions (operator.py)
and the follow-up turn (follow_up.py).
"""

from __future__ import annotations

from typing import Any

from reclaim_tui.core.engine.parts import EngineParts
from reclaim_tui.core.ledger.owner import holder_alive, lanes_process
from reclaim_tui.core.models import Actor, Row, Status
from reclaim_tui.errors import OperatorError

__all__ = ["as_this_process", "refused", "require", "update"]


async def require(parts: EngineParts, idem: str) -> Row:
    """The row, or an OperatorError when there is none."""
    row = await parts.ledger.get(idem)
    if row is None:
        raise OperatorError(f"no job with key {idem}")
    return row


async def update(
    parts: EngineParts,
    idem: str,
    expect: tuple[Status, ...],
    to: Status,
    actor: Actor,
    note: str,
    changes: dict[str, Any],
) -> Row:
    """The row after the compare-and-set, or the OperatorError saying why not."""
    row = await as_this_process(parts, idem, expect, to, actor, note, changes)
    if row is not None:
        return row
    raise await refused(parts, idem, expect)


async def as_this_process(
    parts: EngineParts,
    idem: str,
    expect: tuple[Status, ...],
    to: Status,
    actor: Actor,
    note: str,
    changes: dict[str, Any],
    *,
    inflight: bool | None = None,
) -> Row | None:
    """The ledger's `operator_update` as this engine's owner; a row another
    lane of this process holds (core/engine/lanes.py), in an expected
    status, is tried again as that lane, as a row the engine's own lane
    holds is taken as the engine's. None when it did not apply."""
    row = await parts.ledger.operator_update(
        idem, expect, to, actor, note, changes, me=parts.owner, inflight=inflight
    )
    if row is not None:
        return row
    current = await parts.ledger.get(idem)
    if current is None or current.status not in expect or not current.lease_owner:
        return None
    holder = current.lease_owner
    if holder == parts.owner or lanes_process(holder) != lanes_process(parts.owner):
        return None
    return await parts.ledger.operator_update(
        idem, expect, to, actor, note, changes, me=holder, inflight=inflight
    )


async def refused(parts: EngineParts, idem: str, expect: tuple[Status, ...]) -> OperatorError:
    """Why an operator's compare-and-set on `idem` did not apply."""
    current = await require(parts, idem)
    if current.status not in expect:
        allowed = "/".join(s.value for s in expect)
        return OperatorError(f"{idem} is {current.status}; this applies to {allowed} rows")
    holder = current.lease_owner or "?"
    alive = holder_alive(holder)
    return OperatorError(
        f"{idem} is being worked on by {holder}"
        f"{' (alive)' if alive else ''}; try again when its lease ends"
    )
