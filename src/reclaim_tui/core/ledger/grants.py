"""The app role's grants on a PostgreSQL ledger (`reclaim-tui grants`).

A DML-only app role reads and writes rows; the owner role made the tables
and applies migrations (`reclaim-tui upgrade`). The grants below are what
the app role needs on the schema as it is now, and — `ALTER DEFAULT
PRIVILEGES` — on the tables and sequences the owner's later migrations
add, so an upgrade needs no administrator afterwards. Printed for an
administrator to run, or applied by the owner role itself.
"""

from __future__ import annotations

from reclaim_tui.core.ledger.pg_connect import quote_ident

__all__ = ["ROW_RIGHTS", "grant_statements"]

#: What the app role may do with rows and the identity sequences.
ROW_RIGHTS = "SELECT, INSERT, UPDATE, DELETE"
SEQUENCE_RIGHTS = "SELECT, UPDATE"


def grant_statements(schema: str, owner: str, role: str) -> list[str]:
    """The statements that give `role` the app's rights on `schema` (owned by
    `owner`), now and for what `owner` creates there later."""
    s, o, r = quote_ident(schema), quote_ident(owner), quote_ident(role)
    later = f"ALTER DEFAULT PRIVILEGES FOR ROLE {o} IN SCHEMA {s} GRANT"
    return [
        f"GRANT USAGE ON SCHEMA {s} TO {r};",
        f"GRANT {ROW_RIGHTS} ON ALL TABLES IN SCHEMA {s} TO {r};",
        f"GRANT {SEQUENCE_RIGHTS} ON ALL SEQUENCES IN SCHEMA {s} TO {r};",
        f"{later} {ROW_RIGHTS} ON TABLES TO {r};",
        f"{later} {SEQUENCE_RIGHTS} ON SEQUENCES TO {r};",
    ]
