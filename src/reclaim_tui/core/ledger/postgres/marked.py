"""PostgreSQL migration 4: text stored before the NUL encoding of
core/ledger/postgres/text.py that starts with its mark U+FDD0, encoded.

Such text was read back changed (a result `\\ufdd0"hello"` delivered as
`hello`), or failed the read (`\\ufdd0hello` is not JSON) and with it every
replay, export and migrate. Every such text that is not already an encoding
(the mark and the JSON text of a string that starts with the mark or, escaped,
holds a NUL, written as Python's json.dumps writes it, which is PostgreSQL's
to_json form) is encoded, in every text column of the ledger's tables: after
this migration every stored text that starts with the mark is an encoding,
and reads and the filter's ILIKE see one form. Text from before the encoding
could hold no NUL: a JSON string with one escaped is the encoding's own.

A shipped migration's text never changes. No % in it: psycopg would read one
as a placeholder.
"""

from __future__ import annotations

__all__ = ["REENCODE_MARKED"]

REENCODE_MARKED = """
    CREATE FUNCTION reclaim_reencode(v TEXT) RETURNS TEXT LANGUAGE plpgsql AS $fn$
    DECLARE
        body TEXT := substr(v, 2);
        held TEXT;
    BEGIN
        BEGIN
            IF json_typeof(body::json) = 'string' THEN
                held := body::json #>> '{}';
                IF starts_with(held, chr(64976)) AND to_json(held)::text = body THEN
                    RETURN v;
                END IF;
            END IF;
        EXCEPTION
            WHEN untranslatable_character THEN
                RETURN v;  -- a JSON string holding an escaped NUL: the encoding's own
            WHEN others THEN
                NULL;  -- not JSON: text as it was written
        END;
        RETURN chr(64976) || to_json(v)::text;
    END
    $fn$;
    DO $do$
    DECLARE
        col RECORD;
    BEGIN
        FOR col IN
            SELECT c.relname, a.attname FROM pg_attribute a
            JOIN pg_class c ON c.oid = a.attrelid
            JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'meta'
              AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'text'::regtype
            ORDER BY c.relname, a.attnum
        LOOP
            EXECUTE 'UPDATE ' || quote_ident(col.relname) || ' SET '
                || quote_ident(col.attname) || ' = reclaim_reencode('
                || quote_ident(col.attname) || ') WHERE starts_with('
                || quote_ident(col.attname) || ', chr(64976))';
        END LOOP;
    END
    $do$;
    DROP FUNCTION reclaim_reencode(TEXT);
    """
