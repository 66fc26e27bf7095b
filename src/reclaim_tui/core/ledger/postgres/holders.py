"""The lease holders other than a process, read on PostgreSQL from a table
of lease horizons: one row per owner, the latest lease end it ever took.

`jobs` has no index on the lease owner. A claim or a renewal changes only
the lease's columns, and with none of them indexed the update can be HOT
(written beside the old version on its page, no index entry at all);
with an index on the owner every claim wrote a new entry into each index
of `jobs`. The holders' probe a claim runs reads `lease_horizons` instead:

- every statement that sets a lease (the claims: the shared one below and
  the keyed one, core/ledger/postgres/claims.py; the renewal) raises its
  owner's horizon to the lease's end in the same statement, so in the
  same transaction: a lease visible to a reader has its horizon visible;
- a horizon never goes down while it is live (a release or a transition
  clears a row's lease and leaves it), so the owners with a live horizon
  are a superset of the owners with a live lease. The probe's answer is
  only used to name the holders provably gone (core/ledger/owner.py), whose
  leases a claim may take: an owner gone whose leases all ended or were
  given back has nothing a claim could take by its name, so the superset
  frees exactly the rows the exact set frees;
- a statement that took no lease writes no horizon (an empty claim stays a
  read: no WAL, no commit to flush);
- a horizon is written after the rows in its statement, and only by the
  statement that leased them: the horizon's row lock is the last lock a
  transaction takes, never held while it waits on a row of `jobs`;
- the probe reads the live horizons only, through their index on the
  horizon (a transaction that has sequential scans off still has a path
  that is cheap to plan and run); horizons long run out are dropped by the
  process registry's prune (`PRUNE_HORIZONS`), skipping any another
  transaction holds.
"""

from __future__ import annotations

from reclaim_tui.core.ledger.dialect import POSTGRES, text_for
from reclaim_tui.core.ledger.schema import COLUMNS

__all__ = [
    "HORIZONS_OF_ROWS",
    "LEASE_HORIZONS",
    "LIVE_HOLDERS",
    "PRUNE_HORIZONS",
    "RENEW_SQL",
    "horizon_claim_sql",
    "raise_horizon",
]

#: Migration 7: the horizons, one per owner named on a row now (the latest
#: end of its leases there), and the owner's index dropped. Every role
#: granted rights on `jobs` gets the same rights on the new table (a claim
#: writes it, `status` reads it): a role granted table by table keeps
#: working after the owner's upgrade, without an administrator (a grant
#: with default privileges, `reclaim-tui grants`, covers it already).
LEASE_HORIZONS = """
    CREATE TABLE lease_horizons (
        owner TEXT COLLATE "C" PRIMARY KEY,
        until DOUBLE PRECISION NOT NULL
    );
    INSERT INTO lease_horizons(owner, until)
        SELECT lease_owner, max(lease_until) FROM jobs
        WHERE lease_owner IS NOT NULL GROUP BY lease_owner;
    CREATE INDEX lease_horizons_until ON lease_horizons(until);
    DROP INDEX jobs_leased;
    DO $grant$ DECLARE r RECORD; BEGIN
        FOR r IN SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                        ELSE a.grantee::regrole::text END AS role,
                        string_agg(a.privilege_type, ', ') AS rights
                 FROM pg_class AS c, aclexplode(c.relacl) AS a
                 WHERE c.oid = 'jobs'::regclass AND a.grantee <> c.relowner
                   AND a.privilege_type IN ('SELECT', 'INSERT', 'UPDATE', 'DELETE')
                 GROUP BY a.grantee
        LOOP
            EXECUTE 'GRANT ' || r.rights || ' ON lease_horizons TO ' || r.role;
        END LOOP;
    END $grant$;
"""

#: (me, now): the owners of a horizon live at `now`, other than `me`: every
#: owner of a live lease, and maybe owners whose leases ended early.
LIVE_HOLDERS = "SELECT owner FROM lease_horizons WHERE owner != %s AND until > %s"


def raise_horizon(taken: str, owner: str, until: str) -> str:
    """A CTE (after `taken`, a CTE of the rows leased) that raises `owner`'s
    horizon to `until` (SQL expressions) if `taken` leased any row."""
    return (
        f" horizon AS (INSERT INTO lease_horizons(owner, until) SELECT {owner}, {until}"
        f" WHERE EXISTS (SELECT 1 FROM {taken}) ON CONFLICT (owner) DO UPDATE"
        " SET until = excluded.until WHERE lease_horizons.until < excluded.until)"
    )


def horizon_claim_sql(where: str, free: str) -> str:
    """The shared claim (core/ledger/schema.py `claim_sql`: the same
    parameters, the same rows) with its owner's horizon raised."""
    return (
        "WITH lease AS (SELECT %s::text AS owner, %s::float8 AS until),"
        " taken AS (UPDATE jobs SET prev_owner = lease_owner,"
        " lease_owner = (SELECT owner FROM lease), lease_until = (SELECT until FROM lease)"
        f" WHERE idem IN (SELECT idem FROM jobs WHERE {text_for(where, POSTGRES)}"
        f" AND {text_for(free, POSTGRES)} ORDER BY next_at LIMIT %s FOR UPDATE SKIP LOCKED)"
        f" RETURNING {COLUMNS}),"
        + raise_horizon("taken", "(SELECT owner FROM lease)", "(SELECT until FROM lease)")
        + f" SELECT {COLUMNS} FROM taken"
    )


#: (lease end, owner, keys as a JSON array): the renewal (core/ledger/base.py's)
#: with its owner's horizon raised.
RENEW_SQL = (
    "WITH lease AS (SELECT %s::float8 AS until, %s::text AS owner),"
    " renewed AS (UPDATE jobs SET lease_until = (SELECT until FROM lease)"
    " WHERE lease_owner = (SELECT owner FROM lease)"
    " AND idem IN (SELECT value FROM json_array_elements_text(%s::json)) RETURNING idem),"
    + raise_horizon("renewed", "(SELECT owner FROM lease)", "(SELECT until FROM lease)")
    + " SELECT idem FROM renewed"
)

#: The horizons of the leases on rows written without a claim (a copied
#: ledger's, core/ledger/transfer.py), raised as a claim raises them.
HORIZONS_OF_ROWS = (
    "INSERT INTO lease_horizons(owner, until) SELECT lease_owner, max(lease_until) FROM jobs"
    " WHERE lease_owner IS NOT NULL GROUP BY lease_owner ON CONFLICT (owner) DO UPDATE"
    " SET until = excluded.until WHERE lease_horizons.until < excluded.until"
)

#: (before): drop the horizons that ran out before `before`, but none another
#: transaction holds (a claim raising it now: no wait, no deadlock).
PRUNE_HORIZONS = (
    "DELETE FROM lease_horizons WHERE owner IN (SELECT owner FROM lease_horizons"
    " WHERE until < %s FOR UPDATE SKIP LOCKED)"
)
