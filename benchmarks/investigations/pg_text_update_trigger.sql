-- The handle and spec rows of job_text kept by one statement-level trigger
-- with transition tables instead of the shipped row trigger (PostgreSQL
-- migration 5, core/ledger/postgres/job_text.py). PostgreSQL refuses a
-- transition table on a trigger that names its columns, so this one fires
-- for every UPDATE of jobs and captures the old and new version of every
-- row each of them writes. Counted on a fresh ledger:
--
--   python benchmarks/investigations/pg_wal_by_relation.py --jobs 10000 \
--       --ddl "$(cat benchmarks/investigations/pg_text_update_trigger.sql)"
--
-- beside a run without --ddl (the shipped trigger). The group commit turns
-- hash joins off for its transaction; the function turns them on again for
-- its join of the two transition tables.
DROP TRIGGER job_text_changed ON jobs;
CREATE FUNCTION reclaim_text_changed_all() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    SET enable_hashjoin = on SET enable_seqscan = on AS $fn$
BEGIN
    WITH c AS MATERIALIZED (
        SELECT n.id, n.handle, n.spec, o.handle IS DISTINCT FROM n.handle AS h,
               o.spec IS DISTINCT FROM n.spec AS s
        FROM o JOIN n USING (id)
        WHERE o.handle IS DISTINCT FROM n.handle OR o.spec IS DISTINCT FROM n.spec),
    d AS (DELETE FROM job_text t USING c
          WHERE t.job = c.id AND ((t.kind = 'h' AND c.h) OR (t.kind = 'i' AND c.s)))
    INSERT INTO job_text (job, kind, text)
        SELECT id, 'h', handle FROM c WHERE h AND handle IS NOT NULL
        UNION ALL SELECT id, 'i', input FROM c, reclaim_input(c.spec) AS s(input)
            WHERE c.s AND input IS NOT NULL;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER job_text_changed_all AFTER UPDATE ON jobs
    REFERENCING OLD TABLE AS o NEW TABLE AS n FOR EACH STATEMENT
    EXECUTE FUNCTION reclaim_text_changed_all();
