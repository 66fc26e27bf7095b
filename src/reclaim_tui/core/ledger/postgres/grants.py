"""The app role's grants on a PostgreSQL ledger (`reclaim-tui grants`).

A DML-only app role reads and writes rows; the owner role made the tables
and applies migrations (`reclaim-tui upgrade`). The grants below are what
the app role needs on the schema as it is now, and — `ALTER DEFAULT
PRIVILEGES` — on the tables and sequences the owner's later migrations
add, so an upgrade needs no administrator afterwards. Printed for an
administrator to run, or applied by the owner role itself.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from reclaim_tui.core.ledger.postgres.connect import dial, map_pg_error
from reclaim_tui.core.ledger.postgres.search_path import schema_for
from reclaim_tui.core.ledger.urls import is_database_url, shown_db
from reclaim_tui.errors import ConfigError, LedgerError

__all__ = ["ROW_RIGHTS", "grant_statements", "role_grants"]

#: What the app role may do with rows and the identity sequences.
ROW_RIGHTS = "SELECT, INSERT, UPDATE, DELETE"
SEQUENCE_RIGHTS = "SELECT, UPDATE"


def grant_statements(schema: str, owner: str, role: str) -> list[str]:
    """The statements that give `role` the app's rights on `schema` (owned by
    `owner`), now and for what `owner` creates there later."""
    names = {"s": sql.Identifier(schema), "o": sql.Identifier(owner), "r": sql.Identifier(role)}
    later = "ALTER DEFAULT PRIVILEGES FOR ROLE {o} IN SCHEMA {s} GRANT"
    return [
        sql.SQL(statement).format(**names).as_string()
        for statement in (
            "GRANT USAGE ON SCHEMA {s} TO {r};",
            f"GRANT {ROW_RIGHTS} ON ALL TABLES IN SCHEMA {{s}} TO {{r}};",
            f"GRANT {SEQUENCE_RIGHTS} ON ALL SEQUENCES IN SCHEMA {{s}} TO {{r}};",
            f"{later} {ROW_RIGHTS} ON TABLES TO {{r}};",
            f"{later} {SEQUENCE_RIGHTS} ON SEQUENCES TO {{r}};",
        )
    ]


async def role_grants(
    db: str, busy_timeout: float, role: str, *, apply: bool
) -> tuple[str, list[str]]:
    """The schema's owner and `role`'s grant statements on the ledger `db`;
    with `apply`, run by the owner role itself (a LedgerError if connected
    as another role)."""
    from reclaim_tui.core.ledger.postgres.schema import schema_owner

    if not is_database_url(db):
        raise ConfigError("grants: a SQLite ledger has no roles (file permissions decide)")
    where, (schema, _) = shown_db(db), schema_for(db)
    conn = await dial(db, busy_timeout, readonly=not apply)
    try:
        owner = await schema_owner(conn, schema)
        if owner is None:
            raise LedgerError(f"{where}: no schema {schema!r} (run `upgrade` or `tick` first)")
        statements = grant_statements(schema, owner, role)
        if apply:
            if str(conn.info.user) != owner:
                raise LedgerError(
                    f"{where}: run --apply as the schema's owner role {owner!r} (connected as"
                    f" {conn.info.user!r}), or have an administrator run the printed SQL"
                )
            async with conn.transaction():
                for statement in statements:
                    await conn.execute(statement)
    except psycopg.Error as exc:
        raise map_pg_error(exc, where) from exc
    finally:
        await conn.close()
    return owner, statements
