"""`reclaim-tui upgrade`: the ledger's schema migrations, on purpose.

A writable open migrates a ledger as it always did; this is the way an
owner does it alone, before the services of a new version start: it opens
nothing but the ledger, sends and delivers nothing, and `--dry-run` lists
the migrations without applying them. On PostgreSQL it must run as the
role that owns the ledger's schema (a DML-only app role may not create
tables, and should not be given the right to): the plan names that role.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.urls import is_database_url, shown_db
from reclaim_tui.errors import LedgerError, LedgerForeignError, LedgerVersionError

__all__ = ["UpgradePlan", "apply", "plan", "summary"]


@dataclass(frozen=True)
class UpgradePlan:
    """Where a ledger is and what upgrading it would run."""

    db: str
    stored: int
    target: int
    #: (number, what it does) of each migration to run, in order
    steps: list[tuple[int, str]] = field(default_factory=list)
    #: PostgreSQL: the role this connection is, and the one owning the schema
    role: str | None = None
    owner: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "db": self.db,
            "stored": self.stored,
            "target": self.target,
            "migrations": [{"number": n, "does": what} for n, what in self.steps],
            "role": self.role,
            "owner": self.owner,
        }


def summary(sql: str) -> str:
    """A migration's first statement, on one line (what it does, roughly)."""
    words = " ".join(sql.split())
    first = words.split(";")[0].split("(")[0].strip()
    return first[:80] or "(no statement)"


async def plan(db: str, busy_timeout: float = 10.0) -> UpgradePlan:
    """What `apply` would run; nothing is written."""
    if is_database_url(db):
        return await _pg_plan(db, busy_timeout)
    return _sqlite_plan(db)


async def apply(db: str, busy_timeout: float = 10.0) -> UpgradePlan:
    """Apply the migrations `plan` lists (a writable open of the ledger, closed
    at once); the plan that was applied."""
    before = await plan(db, busy_timeout)
    if before.steps:
        ledger = await open_ledger(db, busy_timeout=busy_timeout, create=False)
        await ledger.close()
    return before


def _sqlite_plan(db: str) -> UpgradePlan:
    from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS, SCHEMA_VERSION

    if not Path(db).is_file():
        raise LedgerError(f"{db}: no ledger here (run `tick` or `submit` first)")
    try:
        conn = sqlite3.connect(f"{Path(db).resolve().as_uri()}?mode=ro", uri=True)
        try:
            stored = int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"{db}: cannot be read as a ledger ({exc})") from exc
    _check(db, stored, SCHEMA_VERSION)
    steps = [(n + 1, summary(MIGRATIONS[n])) for n in range(stored, SCHEMA_VERSION)]
    return UpgradePlan(db, stored, SCHEMA_VERSION, steps)


async def _pg_plan(url: str, busy_timeout: float) -> UpgradePlan:
    import psycopg

    from reclaim_tui.core.ledger.postgres.connect import dial, map_pg_error
    from reclaim_tui.core.ledger.postgres.schema import (
        PG_MIGRATIONS,
        PG_SCHEMA_VERSION,
        schema_for,
        schema_owner,
        stored_version,
    )

    where = shown_db(url)
    schema, _ = schema_for(url)
    conn = await dial(url, busy_timeout, readonly=True)
    try:
        stored = await stored_version(conn, schema)
        owner = await schema_owner(conn, schema)
        role = str(conn.info.user)
    except psycopg.Error as exc:
        raise map_pg_error(exc, where) from exc
    finally:
        await conn.close()
    if stored is None:
        raise LedgerForeignError(f"{where}: the schema {schema!r} holds tables of something else")
    _check(where, stored, PG_SCHEMA_VERSION)
    steps = [(n + 1, summary(PG_MIGRATIONS[n])) for n in range(stored, PG_SCHEMA_VERSION)]
    return UpgradePlan(where, stored, PG_SCHEMA_VERSION, steps, role=role, owner=owner)


def _check(where: str, stored: int, target: int) -> None:
    if stored == 0:
        raise LedgerError(f"{where}: no ledger here (run `tick` or `submit` first)")
    if stored > target:
        raise LedgerVersionError(
            f"{where}: written by a newer reclaim-tui (schema {stored}, this version"
            f" knows up to {target}); upgrade reclaim-tui to open it"
        )
