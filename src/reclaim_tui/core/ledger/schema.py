"""The ledger file's shape and the SQL its modules share.

Numbered migrations and the column order a row is read in; the one SQL
spelling of "lease free", "orphan" and "append an event"; the one place a
SELECT tuple becomes a Row; how a sqlite3 error becomes a LedgerError.
Nothing here opens a connection: `core/ledger/sqlite.py` runs the migrations,
`core/ledger/base.py` and `core/ledger/compare_and_set.py` run the statements.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from reclaim_tui.core.models import Row, Status
from reclaim_tui.errors import (
    LedgerBusyError,
    LedgerConflictError,
    LedgerCorruptError,
    LedgerError,
    LedgerFullError,
    LedgerReadOnlyError,
)

__all__ = [
    "COLUMNS",
    "EVENT_SQL",
    "MIGRATIONS",
    "ORPHAN_SQL",
    "SCHEMA_VERSION",
    "SEARCH_BATCH",
    "SEARCH_FLUSH_SQL",
    "chunks",
    "input_text_sql",
    "lease_free_sql",
    "map_sqlite_error",
    "migration_statements",
    "orphan_sql",
    "row_from_tuple",
]

COLUMNS = (
    "idem, spec, model, status, handle, attempts, polls, inflight, held, duplicates, "
    "error_streak, prev_owner, lease_owner, lease_until, next_at, last_error, created_at, "
    "state_since, submitted_at, done_at, consumed_at, updated_at, sent_at, outside_streak"
)


def input_text_sql(spec: str) -> str:
    """The searchable input of the spec JSON in column `spec`: the text of a
    string input, the JSON text of a structured one; NULL for a spec that is
    not JSON (a hand-edited row must not make every write to it fail)."""
    return f"CASE WHEN json_valid({spec}) THEN json_extract({spec}, '$.input') END"


#: Queued rows past which the next queued change moves them all into the index.
SEARCH_BATCH = 1000

# The console's free text as FTS5 trigram indexes
# (https://www.sqlite.org/fts5.html#the_trigram_tokenizer): any substring of
# 3+ characters is a few trigrams to look up instead of a scan of jobs.
#
# - Two indexes keyed by jobs.id: jobs_fts (key, input), written once per job
#   since neither changes, and handles_fts (handle), written when the handle
#   is set. One index over all three would re-tokenize the whole input twice
#   (delete + insert) for every handle set, and prompts are long.
# - External content over a view of jobs (no second copy of the text):
#   `rebuild` backfills, `integrity-check` compares the index with jobs.
#   Only the spec's input is indexed: that is what the filter documents, and
#   the spec's other keys would put the model name in every row's text.
# - detail=none, columnsize=0: a quarter of detail=full's size (79 vs 304 MiB
#   at 1M rows). No phrase queries then: the reader looks a row up by a few of
#   its trigrams and re-checks the substring on the row (core/ledger/queries.py).
# - The triggers never write an index row by row: SQLite 3.40's FTS5 flushes
#   its pending terms to a new segment at every statement savepoint, which
#   cost ~100 µs a row. They queue the row id (with the values it is indexed
#   under: an external-content index needs them to delete it), and once
#   SEARCH_BATCH rows wait one statement moves the queue into the index.
#   Readers take every queued row as a candidate, so a change is found at once.
# - UPDATE triggers fire only when an indexed column changes: the ledger's hot
#   path (status, leases, next_at) never touches the indexes.
# The SQL below is migration 5 as released: changing what is indexed is a
# new migration that recreates the view, the triggers and the indexes.
_TEXT_FLUSH = f"""
    INSERT INTO jobs_fts(jobs_fts, rowid, idem, input)
        SELECT 'delete', id, idem, input FROM jobs_fts_pending WHERE idem IS NOT NULL;
    INSERT INTO jobs_fts(rowid, idem, input)
        SELECT jobs.id, jobs.idem, {input_text_sql("jobs.spec")}
        FROM jobs_fts_pending JOIN jobs ON jobs.id = jobs_fts_pending.id ORDER BY jobs.id;
    DELETE FROM jobs_fts_pending;
"""
_HANDLE_FLUSH = """
    INSERT INTO handles_fts(handles_fts, rowid, handle)
        SELECT 'delete', id, handle FROM handles_fts_pending WHERE handle IS NOT NULL;
    INSERT INTO handles_fts(rowid, handle)
        SELECT jobs.id, jobs.handle
        FROM handles_fts_pending JOIN jobs ON jobs.id = handles_fts_pending.id
        WHERE jobs.handle IS NOT NULL ORDER BY jobs.id;
    DELETE FROM handles_fts_pending;
"""


# A queued row's idem/input (handle) are what the index holds for it; NULL:
# nothing (a row inserted since the last move, or a handle not yet set).
_SEARCH_MIGRATION = f"""
    CREATE VIEW jobs_fts_source(id, idem, handle, input) AS
        SELECT id, idem, handle, {input_text_sql("spec")} FROM jobs;
    CREATE VIRTUAL TABLE jobs_fts USING fts5(
        idem, input, content='jobs_fts_source', content_rowid='id',
        tokenize='trigram', detail=none, columnsize=0
    );
    CREATE VIRTUAL TABLE handles_fts USING fts5(
        handle, content='jobs_fts_source', content_rowid='id',
        tokenize='trigram', detail=none, columnsize=0
    );
    INSERT INTO jobs_fts(jobs_fts) VALUES ('rebuild');
    INSERT INTO handles_fts(handles_fts) VALUES ('rebuild');
    CREATE TABLE jobs_fts_pending (id INTEGER PRIMARY KEY, idem TEXT, input);
    CREATE TABLE handles_fts_pending (id INTEGER PRIMARY KEY, handle TEXT);
    CREATE TRIGGER jobs_fts_insert AFTER INSERT ON jobs BEGIN
        INSERT OR IGNORE INTO jobs_fts_pending(id) VALUES (new.id);
        INSERT OR IGNORE INTO handles_fts_pending(id) SELECT new.id WHERE new.handle IS NOT NULL;
    END;
    CREATE TRIGGER jobs_fts_update AFTER UPDATE OF idem, spec ON jobs
    WHEN old.idem IS NOT new.idem OR old.spec IS NOT new.spec BEGIN
        INSERT OR IGNORE INTO jobs_fts_pending(id, idem, input)
            VALUES (old.id, old.idem, {input_text_sql("old.spec")});
    END;
    CREATE TRIGGER handles_fts_update AFTER UPDATE OF handle ON jobs
    WHEN old.handle IS NOT new.handle BEGIN
        INSERT OR IGNORE INTO handles_fts_pending(id, handle) VALUES (old.id, old.handle);
    END;
    CREATE TRIGGER jobs_fts_delete AFTER DELETE ON jobs BEGIN
        INSERT OR IGNORE INTO jobs_fts_pending(id, idem, input)
            VALUES (old.id, old.idem, {input_text_sql("old.spec")});
        INSERT OR IGNORE INTO handles_fts_pending(id, handle) VALUES (old.id, old.handle);
    END;
    CREATE TRIGGER jobs_fts_move AFTER INSERT ON jobs_fts_pending
    WHEN (SELECT COUNT(*) FROM jobs_fts_pending) >= {SEARCH_BATCH}
    BEGIN {_TEXT_FLUSH} END;
    CREATE TRIGGER handles_fts_move AFTER INSERT ON handles_fts_pending
    WHEN (SELECT COUNT(*) FROM handles_fts_pending) >= {SEARCH_BATCH}
    BEGIN {_HANDLE_FLUSH} END;
"""
#: Move every queued row into the indexes now (tests; before an integrity-check).
SEARCH_FLUSH_SQL = _TEXT_FLUSH + _HANDLE_FLUSH


# Numbered migrations; PRAGMA user_version records how many have run.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE jobs (
        id           INTEGER PRIMARY KEY,
        idem         TEXT NOT NULL UNIQUE,
        spec         TEXT NOT NULL,
        model        TEXT NOT NULL,
        status       TEXT NOT NULL CHECK (status IN
                       ('reserving','submitted','done','consumed','failed','cancelled')),
        handle       TEXT UNIQUE,
        attempts     INTEGER NOT NULL DEFAULT 0,
        polls        INTEGER NOT NULL DEFAULT 0,
        inflight     INTEGER NOT NULL DEFAULT 0,
        held         INTEGER NOT NULL DEFAULT 0,
        duplicates   INTEGER NOT NULL DEFAULT 0,
        error_streak INTEGER NOT NULL DEFAULT 0,
        lease_owner  TEXT,
        lease_until  REAL NOT NULL DEFAULT 0,
        next_at      REAL NOT NULL DEFAULT 0,
        last_error   TEXT,
        created_at   REAL NOT NULL,
        state_since  REAL NOT NULL,
        submitted_at REAL,
        done_at      REAL,
        consumed_at  REAL,
        updated_at   REAL NOT NULL
    );
    CREATE INDEX jobs_due ON jobs(status, next_at);
    CREATE INDEX jobs_status_age ON jobs(status, state_since, idem);
    CREATE INDEX jobs_updated ON jobs(updated_at, idem);
    CREATE INDEX jobs_leased ON jobs(lease_owner) WHERE lease_owner IS NOT NULL;
    CREATE TABLE results (
        job            INTEGER PRIMARY KEY REFERENCES jobs(id),
        idem           TEXT NOT NULL,
        interaction_id TEXT NOT NULL,
        output_text    TEXT NOT NULL,
        usage          TEXT,
        raw_json       TEXT NOT NULL,
        stored_at      REAL NOT NULL
    );
    CREATE TABLE events (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        at          REAL NOT NULL,
        job         INTEGER NOT NULL REFERENCES jobs(id),
        idem        TEXT NOT NULL,
        actor       TEXT NOT NULL,
        from_status TEXT,
        to_status   TEXT,
        note        TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX events_job ON events(job, id);
    """,
    # 2: who held a row before the current claim, so recovery can tell a dead
    # holder's orphan from one whose holder is merely late (and may still send).
    """
    ALTER TABLE jobs ADD COLUMN prev_owner TEXT;
    """,
    # 3: when the current attempt's create was sent, so a label lookup that
    # finds nothing is trusted only once that request can no longer land.
    # … and how many calls for the row in a row failed for causes outside
    # the job (auth, network, rate limit, capacity): they pace its retries
    # but never spend its attempts.
    """
    ALTER TABLE jobs ADD COLUMN sent_at REAL;
    ALTER TABLE jobs ADD COLUMN outside_streak INTEGER NOT NULL DEFAULT 0;
    """,
    # 4: the webhook inbox (core/ledger/inbox.py): every verified delivery, once by
    # its `webhook-id`, with the interaction it names and the job key its
    # user_metadata carries; and the inbox's counters (refused deliveries).
    """
    CREATE TABLE inbox (
        webhook_id  TEXT PRIMARY KEY,
        received_at REAL NOT NULL,
        type        TEXT NOT NULL,
        interaction TEXT,
        job         TEXT,
        api_status  TEXT,
        signed_by   TEXT NOT NULL
    );
    CREATE INDEX inbox_interaction ON inbox(interaction);
    CREATE INDEX inbox_job ON inbox(job) WHERE job IS NOT NULL;
    CREATE INDEX inbox_received ON inbox(received_at);
    CREATE TABLE inbox_counters (
        name       TEXT PRIMARY KEY,
        value      INTEGER NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
    # 5: the console filter's text index (issue 14), see _SEARCH_MIGRATION.
    _SEARCH_MIGRATION,
    # 6: the ledger's own id, random, made once (issue 22 point 6): what
    # tells this ledger from another file put in its place (core/ledger/identity.py).
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta(key, value) VALUES ('ledger_id', lower(hex(randomblob(16))));
    """,
    # 7: ledgers made by the first shipped texts of migrations 1 and 3, which
    # were edited later (issue 23), are brought to their texts as they are
    # now by connection._repair_edited, which runs before any migration; this
    # number makes a ledger already at 5 or 6 go through it once. No SQL of its own.
    "",
)
SCHEMA_VERSION = len(MIGRATIONS)

# Events and results hang off the job's integer id, not its (random) key:
# rows of one batch were inserted together, so their ids — and the index
# pages a batch writes — are contiguous instead of scattered over the tree.
EVENT_SQL = (
    "INSERT INTO events(at, job, idem, actor, from_status, to_status, note)"
    " SELECT ?1, id, ?2, ?3, ?4, ?5, ?6 FROM jobs WHERE idem = ?2"
)


# The one spelling in SQL of "nobody can act on this row" and of "orphan"
# (Row.lease_free / Row.is_orphan are the same rules in Python; a test checks
# that they agree). `?1`-style numbering is avoided: callers splice these in.
_FREE = (
    "(lease_owner IS NULL OR lease_until <= ? OR lease_owner IN (SELECT value FROM json_each(?)))"
)
ORPHAN_SQL = f"(status = 'reserving' AND (held = 1 OR (inflight = 1 AND {_FREE})))"


def lease_free_sql(now: float, dead: Sequence[str]) -> tuple[str, list[Any]]:
    """The lease-free rule as a WHERE fragment and its parameters."""
    return _FREE, [now, json.dumps(list(dead))]


def orphan_sql(now: float, dead: Sequence[str]) -> tuple[str, list[Any]]:
    """The orphan rule as a WHERE fragment and its parameters."""
    return ORPHAN_SQL, [now, json.dumps(list(dead))]


def migration_statements(script: str) -> list[str]:
    """The statements of one migration, in order. A trigger's body holds `;`
    of its own, so a piece ends a statement only once SQLite calls it complete
    (https://www.sqlite.org/c3ref/complete.html)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        raise ValueError(f"an unfinished statement ends the migration: {pending.strip()!r}")
    return statements


def row_from_tuple(values: Sequence[Any]) -> Row:
    """The one place a SELECT tuple becomes a Row (column order = COLUMNS)."""
    v = list(values)
    v[3] = Status(v[3])
    v[7] = bool(v[7])
    v[8] = bool(v[8])
    return Row(*v)


def map_sqlite_error(exc: sqlite3.Error, path: str) -> LedgerError:
    """The LedgerError subclass that says what went wrong with the file at `path`."""
    if isinstance(exc, sqlite3.IntegrityError):
        return LedgerConflictError(f"{path}: the write conflicts with another row ({exc})")
    text = str(exc).lower()
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in text:
        return LedgerFullError(f"{path}: no room left on the disk for the ledger ({exc})")
    if "locked" in text or "busy" in text:
        return LedgerBusyError(
            f"{path}: the ledger stayed locked by another process past busy_timeout ({exc})"
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return LedgerReadOnlyError(f"{path}: the ledger cannot be written ({exc})")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return LedgerCorruptError(f"{path}: not a usable SQLite ledger ({exc})")
    return LedgerError(f"{path}: {exc}")


def chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """`items` in slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
