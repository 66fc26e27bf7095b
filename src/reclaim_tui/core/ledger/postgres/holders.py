"""The lease holders other than a process, read on PostgreSQL by a skip
over the lease owner's index: one probe per distinct owner.

The shared statement (core/ledger/base.py: `SELECT DISTINCT lease_owner …`)
reads every leased row, and a claim asks it every time: with a large submit
leased by its own process that is every reserved row, again per claim. Here
each step finds the next owner after the last (`lease_owner > …` on
jobs_leased, LIMIT 1), skips the asking process without reading its rows,
and tests another owner for a live lease by its first one found (a scalar
subquery with LIMIT, run per owner: an EXISTS is planned as a join that reads
every leased row again). The same owners, by the same rule.
"""

from __future__ import annotations

__all__ = ["LIVE_HOLDERS"]

#: (me, now): the owners of a lease live at `now`, other than `me`.
LIVE_HOLDERS = (
    "WITH RECURSIVE owners(owner) AS ("
    " (SELECT lease_owner FROM jobs WHERE lease_owner IS NOT NULL"
    "  ORDER BY lease_owner LIMIT 1)"
    " UNION ALL SELECT (SELECT j.lease_owner FROM jobs AS j WHERE j.lease_owner > o.owner"
    "  ORDER BY j.lease_owner LIMIT 1) FROM owners AS o WHERE o.owner IS NOT NULL)"
    " SELECT o.owner FROM owners AS o WHERE o.owner IS NOT NULL AND o.owner != %s"
    " AND (SELECT true FROM jobs AS j WHERE j.lease_owner = o.owner"
    " AND j.lease_until > %s LIMIT 1)"
)
