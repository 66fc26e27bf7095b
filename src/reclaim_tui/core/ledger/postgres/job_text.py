"""The console filter's text on PostgreSQL: each job's key, input and
handle as rows of their own table (`job_text`), indexed by pg_trgm.

A trigram index on `jobs` itself is written by every update that is not
HOT, and nearly every transition is not (it changes an indexed status, due
time or lease): each one re-indexed the key, the input and the handle
although none of them had changed. Here the text is written when a job is
inserted (one statement per INSERT, from its transition table), when its
handle or spec changes (a row trigger that fires only for statements that
set either), and deleted with the job; the transitions' own updates never
touch it.

The trigger functions are SECURITY DEFINER, owned by the schema's owner who
runs the migration: an app role granted the rows of the tables that existed
before (the manual's `GRANT … ON ALL TABLES`, run before the upgrade) keeps
inserting and updating jobs without a right on `job_text`. Their search
path is the one the migration ran with (the ledger's schema first), fixed,
so a caller's path cannot redirect their writes.

One row per (job, kind): `k` the key, `i` the input (`reclaim_input(spec)`,
none where that is NULL), `h` the handle (none until set). The console's
lookup (core/ledger/console/text_search.py) reads the distinct jobs whose
text matches, then narrows them on `jobs` with the filter's own test, so
this table only has to hold every job's current text.
"""

from __future__ import annotations

__all__ = ["JOB_TEXT", "JOB_TEXT_INDEX", "JOB_TEXT_INDEX_NAMES"]

JOB_TEXT = """
    CREATE TABLE job_text (
        job  BIGINT NOT NULL,
        kind "char" NOT NULL CHECK (kind IN ('k', 'i', 'h')),
        text TEXT COLLATE "C" NOT NULL,
        PRIMARY KEY (job, kind)
    );
    -- no job written between the copy below and the triggers: inserts and
    -- updates wait for this migration's commit, and then fire the triggers
    LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE;
    DO $do$ DECLARE q TEXT := quote_ident(current_schema()); BEGIN
        -- the trigram indexes on jobs, in this ledger's schema only (another
        -- ledger's of the same name later in the search path is not ours)
        EXECUTE 'DROP INDEX IF EXISTS ' || q || '.jobs_idem_trgm, ' || q || '.jobs_handle_trgm, '
            || q || '.jobs_input_trgm';
    END $do$;
    INSERT INTO job_text (job, kind, text)
        SELECT id, 'k', idem FROM jobs
        UNION ALL SELECT id, 'i', input FROM jobs, reclaim_input(spec) AS s(input)
            WHERE input IS NOT NULL
        UNION ALL SELECT id, 'h', handle FROM jobs WHERE handle IS NOT NULL;
    CREATE FUNCTION reclaim_text_added() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    BEGIN
        INSERT INTO job_text (job, kind, text)
            SELECT id, 'k', idem FROM added
            UNION ALL SELECT id, 'i', input FROM added, reclaim_input(spec) AS s(input)
                WHERE input IS NOT NULL
            UNION ALL SELECT id, 'h', handle FROM added WHERE handle IS NOT NULL;
        RETURN NULL;
    END
    $fn$;
    CREATE FUNCTION reclaim_text_changed() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    BEGIN
        IF OLD.handle IS DISTINCT FROM NEW.handle THEN
            IF OLD.handle IS NOT NULL THEN
                DELETE FROM job_text WHERE job = OLD.id AND kind = 'h';
            END IF;
            INSERT INTO job_text (job, kind, text)
                SELECT NEW.id, 'h', NEW.handle WHERE NEW.handle IS NOT NULL;
        END IF;
        IF OLD.spec IS DISTINCT FROM NEW.spec THEN
            DELETE FROM job_text WHERE job = OLD.id AND kind = 'i';
            INSERT INTO job_text (job, kind, text)
                SELECT NEW.id, 'i', input FROM reclaim_input(NEW.spec) AS s(input)
                WHERE input IS NOT NULL;
        END IF;
        RETURN NULL;
    END
    $fn$;
    CREATE FUNCTION reclaim_text_removed() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $fn$
    BEGIN
        DELETE FROM job_text WHERE job IN (SELECT id FROM removed);
        RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER job_text_added AFTER INSERT ON jobs
        REFERENCING NEW TABLE AS added FOR EACH STATEMENT
        EXECUTE FUNCTION reclaim_text_added();
    CREATE TRIGGER job_text_changed AFTER UPDATE OF handle, spec ON jobs FOR EACH ROW
        WHEN (OLD.handle IS DISTINCT FROM NEW.handle OR OLD.spec IS DISTINCT FROM NEW.spec)
        EXECUTE FUNCTION reclaim_text_changed();
    CREATE TRIGGER job_text_removed AFTER DELETE ON jobs
        REFERENCING OLD TABLE AS removed FOR EACH STATEMENT
        EXECUTE FUNCTION reclaim_text_removed();
"""

#: The console filter's index (any substring of 3+ characters, `ILIKE`);
#: `{ops}` is pg_trgm's operator class, qualified by the extension's schema.
JOB_TEXT_INDEX = ("CREATE INDEX IF NOT EXISTS job_text_trgm ON job_text USING gin (text {ops})",)
JOB_TEXT_INDEX_NAMES = ("job_text_trgm",)
