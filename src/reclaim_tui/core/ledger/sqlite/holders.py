"""A claim's lease-free rule on SQLite, with the holders provably gone found
inside the claim's own statement.

The shared rule (core/ledger/schema.py) takes the gone holders as a list the
ledger read before the claim's transaction (`dead_holders`): one more call
to the connection's thread per claim. Here the claim's statement runs the
same probe (core/ledger/base.py: one index seek per owner other than the
claimer, live leases only) as a subquery, and asks the process table about
each owner it finds through a function registered on the connection,
`reclaim_holder_dead` (core/ledger/owner.py's rule). SQLite runs the
subquery once per statement, and only once a row's live lease is met: the
same holders, judged as the claim's transaction sees them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reclaim_tui.core.ledger.base import LIVE_LEASES_SQL
from reclaim_tui.core.ledger.dialect import SQLITE, text_for
from reclaim_tui.core.ledger.owner import holder_alive

if TYPE_CHECKING:
    import aiosqlite

__all__ = ["FREE_PROBED", "free_probed", "register"]

_FUNCTION = "reclaim_holder_dead"

#: (now, me, now): nobody live holds the row: no lease, a lease run out, or
#: one whose holder is provably gone.
FREE_PROBED = (
    "(lease_owner IS NULL OR lease_until <= ? OR lease_owner IN ("
    + text_for(LIVE_LEASES_SQL, SQLITE)
    + f" AND {_FUNCTION}(o.owner)))"
)


def _holder_dead(owner: str) -> bool:
    return holder_alive(owner) is False


async def register(db: aiosqlite.Connection) -> None:
    """Give the connection the function FREE_PROBED calls."""
    await db.create_function(_FUNCTION, 1, _holder_dead)


def free_probed(owner: str, now: float) -> tuple[str, list[Any]]:
    """FREE_PROBED and its parameters for a claim by `owner` at `now`."""
    return FREE_PROBED, [now, owner, now]
