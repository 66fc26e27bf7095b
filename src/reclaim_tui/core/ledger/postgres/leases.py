"""Who holds leases on PostgreSQL, kept where a claim's update stays HOT.

A claim writes `lease_owner` and `lease_until` on every row it takes. An
index on either column makes each such update a new row version that every
index of `jobs` must point to again (not a heap-only tuple): the index on
`lease_owner` that `dead_holders` probed once per owner made every claimed
row an entry in each index of `jobs`. That index is dropped here, and `jobs`
leaves room in each page (`fillfactor`) for a claim's new version to stay on
the page of the old one, which a HOT update needs.

`dead_holders` asks instead a table of one row per owner, `lease_holders`:
the latest lease end ever written for that owner. A row trigger on `jobs`
keeps it: it fires only for a row whose lease got another owner or a later
end (a claim, a renewal, a copied row; a transition that keeps or drops the
lease does not fire it), and writes only where the end kept is earlier, so a
claim of many rows upserts its owner once. Every owner with a live lease in
`jobs` has a row here whose end is at least as late: the owners live by this
table are a superset of those live by `jobs`. The ledger then checks each
one it finds provably dead against `jobs` (core/ledger/postgres/ledger.py),
so the answer is the shared statement's. When an owner's row is first made,
the rows of owners whose leases ended a week before its lease are deleted:
they hold no lease live by the server's clock, in which leases are written.

The functions are SECURITY DEFINER, owned by the schema's owner, with their
search path fixed, as core/ledger/postgres/job_text.py's: an app role
granted the rows of the tables that existed before this migration writes
jobs, and asks `reclaim_lease_holders`, without a right on `lease_holders`.
"""

from __future__ import annotations

__all__ = ["HOLDERS", "HOLDING", "LEASE_HOLDERS"]

#: Migration 6: the lease holders' table, its trigger and reader; no index
#: on the lease columns; room for HOT updates in `jobs`' pages.
LEASE_HOLDERS = """
    CREATE TABLE lease_holders (
        owner TEXT COLLATE "C" PRIMARY KEY,
        until DOUBLE PRECISION NOT NULL
    );
    -- no lease written between the copy below and the triggers: inserts and
    -- updates wait for this migration's commit, and then fire the triggers
    LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
    INSERT INTO lease_holders (owner, until)
        SELECT lease_owner, max(lease_until) FROM jobs
        WHERE lease_owner IS NOT NULL GROUP BY lease_owner;
    DO $do$ BEGIN
        -- in this ledger's schema only (another ledger's of the same name
        -- later in the search path is not ours)
        EXECUTE 'DROP INDEX IF EXISTS ' || quote_ident(current_schema()) || '.jobs_leased';
    END $do$;
    ALTER TABLE jobs SET (fillfactor = 50);
    CREATE FUNCTION reclaim_lease_written() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    DECLARE
        fresh BOOLEAN;
    BEGIN
        IF NOT EXISTS (SELECT FROM lease_holders
                       WHERE owner = NEW.lease_owner AND until >= NEW.lease_until) THEN
            INSERT INTO lease_holders AS h (owner, until) VALUES (NEW.lease_owner, NEW.lease_until)
                ON CONFLICT (owner) DO UPDATE SET until = greatest(h.until, excluded.until)
                RETURNING h.xmax = 0 INTO fresh;
            IF fresh THEN  -- a new owner: forget those whose leases ended long before
                DELETE FROM lease_holders WHERE until < NEW.lease_until - 604800;
            END IF;
        END IF;
        RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER jobs_lease_inserted AFTER INSERT ON jobs FOR EACH ROW
        WHEN (NEW.lease_owner IS NOT NULL)
        EXECUTE FUNCTION reclaim_lease_written();
    CREATE TRIGGER jobs_lease_updated AFTER UPDATE OF lease_owner, lease_until ON jobs FOR EACH ROW
        WHEN (NEW.lease_owner IS NOT NULL AND (NEW.lease_until > OLD.lease_until
              OR NEW.lease_owner IS DISTINCT FROM OLD.lease_owner))
        EXECUTE FUNCTION reclaim_lease_written();
    CREATE FUNCTION reclaim_lease_holders(now DOUBLE PRECISION, me TEXT)
        RETURNS SETOF TEXT LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS $fn$
            SELECT owner FROM lease_holders WHERE until > now AND owner <> me ORDER BY owner
        $fn$;
"""

#: (now, me): every owner that may hold a lease live at `now`, other than
#: `me` (a superset: HOLDING narrows the dead ones).
HOLDERS = "SELECT reclaim_lease_holders(%s, %s)"

#: (owners, now): those of `owners` that hold a lease live at `now` in `jobs`.
HOLDING = "SELECT DISTINCT lease_owner FROM jobs WHERE lease_owner = ANY(%s) AND lease_until > %s"
