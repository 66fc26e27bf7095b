"""The SQLite ledger file's shape: its numbered migrations, the repair of
ledgers made by migration texts edited after they shipped, and how a
sqlite3 error becomes a LedgerError.

A shipped migration's text never changes (tests compare them); a change to
the schema is a new number. Nothing here opens a connection:
`core/ledger/sqlite/ledger.py` runs the migrations. PostgreSQL's are in
core/ledger/postgres/schema.py.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from reclaim_tui.core.ledger.schema import input_text_sql
from reclaim_tui.errors import (
    LedgerBusyError,
    LedgerConflictError,
    LedgerCorruptError,
    LedgerError,
    LedgerFullError,
    LedgerReadOnlyError,
)

if TYPE_CHECKING:  # aiosqlite (and asyncio) only where a connection is opened
    import aiosqlite

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SEARCH_BATCH",
    "SEARCH_FLUSH_SQL",
    "map_sqlite_error",
    "migration_statements",
    "repair_edited",
]

#: Queued rows past which a write transaction moves them all into the index.
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
# - detail=none, columnsize=0: about a quarter of detail=full's size. No
#   phrase queries then: the reader looks a row up by a few of
#   its trigrams and re-checks the substring on the row (core/ledger/console/queries.py).
# - The triggers never write an index row by row: SQLite 3.40's FTS5 flushes
#   its pending terms to a new segment at every statement savepoint, a
#   costly write per row. They queue the row id (with the values it is indexed
#   under: an external-content index needs them to delete it), and once
#   SEARCH_BATCH rows wait one statement moves the queue into the index.
#   Readers take every queued row as a candidate, so a change is found at once.
#   Since migration 9 the writer moves the queue (SqliteLedger.write, once it
#   has queued SEARCH_BATCH rows) instead of a trigger that counted the queue
#   at every row queued.
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
# Since migration 10 a new job is not queued: jobs_fts_top holds the largest
# id the index has been brought to, and every row above it is a row the index
# has yet to take (readers take them all as candidates, as the queue's). The
# queue holds only rows at or below it whose indexed values changed (an
# update of key or spec, a delete), with the values the index holds for them.
# A move sets the mark to the largest id left in jobs, not past it: SQLite
# may give a deleted largest id to the next row, which must then count as new.
# The queue drives each join (CROSS JOIN keeps the tables' order): a lookup of
# jobs by id a queued row, not a read of all of jobs for the order of its ids.
_TEXT_MOVE = f"""
    INSERT INTO jobs_fts(jobs_fts, rowid, idem, input)
        SELECT 'delete', id, idem, input FROM jobs_fts_pending WHERE idem IS NOT NULL;
    INSERT INTO jobs_fts(rowid, idem, input)
        SELECT jobs.id, jobs.idem, {input_text_sql("jobs.spec")}
        FROM jobs_fts_pending CROSS JOIN jobs ON jobs.id = jobs_fts_pending.id
        WHERE jobs.id <= (SELECT top FROM jobs_fts_top) ORDER BY jobs_fts_pending.id;
    INSERT INTO jobs_fts(rowid, idem, input)
        SELECT id, idem, {input_text_sql("spec")} FROM jobs
        WHERE id > (SELECT top FROM jobs_fts_top) ORDER BY id;
    DELETE FROM jobs_fts_pending;
    UPDATE jobs_fts_top SET top = (SELECT COALESCE(MAX(id), 0) FROM jobs);
"""
_NEW_BY_ID_MIGRATION = f"""
    CREATE TABLE jobs_fts_top (top INTEGER NOT NULL);
    {_TEXT_FLUSH}
    INSERT INTO jobs_fts_top(top) SELECT COALESCE(MAX(id), 0) FROM jobs;
    DROP TRIGGER jobs_fts_insert;
    CREATE TRIGGER jobs_fts_insert AFTER INSERT ON jobs WHEN new.handle IS NOT NULL BEGIN
        INSERT OR IGNORE INTO handles_fts_pending(id) VALUES (new.id);
    END;
    DROP TRIGGER jobs_fts_update;
    CREATE TRIGGER jobs_fts_update AFTER UPDATE OF idem, spec ON jobs
    WHEN (old.idem IS NOT new.idem OR old.spec IS NOT new.spec)
        AND old.id <= (SELECT top FROM jobs_fts_top) BEGIN
        INSERT OR IGNORE INTO jobs_fts_pending(id, idem, input)
            VALUES (old.id, old.idem, {input_text_sql("old.spec")});
    END;
    DROP TRIGGER jobs_fts_delete;
    CREATE TRIGGER jobs_fts_delete AFTER DELETE ON jobs BEGIN
        INSERT OR IGNORE INTO jobs_fts_pending(id, idem, input)
            SELECT old.id, old.idem, {input_text_sql("old.spec")}
            WHERE old.id <= (SELECT top FROM jobs_fts_top);
        INSERT OR IGNORE INTO handles_fts_pending(id, handle) VALUES (old.id, old.handle);
    END;
"""
#: Move every queued row, and every row above the mark, into the indexes now
#: (the writer, once it queued SEARCH_BATCH rows; tests; before an integrity-check).
_HANDLE_MOVE = _HANDLE_FLUSH.replace("pending JOIN", "pending CROSS JOIN").replace(
    "BY jobs.id", "BY handles_fts_pending.id"
)
SEARCH_FLUSH_SQL = _TEXT_MOVE + _HANDLE_MOVE


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
    # 5: the console filter's text index, see _SEARCH_MIGRATION.
    _SEARCH_MIGRATION,
    # 6: the ledger's own id, random, made once: what
    # tells this ledger from another file put in its place (core/ledger/identity.py).
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta(key, value) VALUES ('ledger_id', lower(hex(randomblob(16))));
    """,
    # 7: ledgers made by the first shipped texts of migrations 1 and 3, which
    # were edited later, are brought to their texts as they are
    # now by repair_edited (below), which runs before any migration; this
    # number makes a ledger already at 5 or 6 go through it once. No SQL of its own.
    "",
    # 8: the process registry (core/ledger/registry.py): every
    # service, tick, console engine and inbox says here who it is, its state
    # and its last pass, so the fleet shows the processes no console is
    # attached to (other hosts, cron ticks). Keyed by the lease owner string.
    """
    CREATE TABLE processes (
        owner        TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        host         TEXT NOT NULL,
        pid          INTEGER,
        started_at   REAL NOT NULL,
        seen_at      REAL NOT NULL,
        state        TEXT NOT NULL,
        interval_s   REAL,
        passes       INTEGER NOT NULL DEFAULT 0,
        last_pass_at REAL,
        last_pass    TEXT,
        version      TEXT NOT NULL
    );
    CREATE INDEX processes_seen ON processes(seen_at);
    """,
    # 9: the text index's queues are moved by the writer, once a write
    # transaction finds SEARCH_BATCH rows queued since its last move
    # (core/ledger/sqlite/ledger.py), not by triggers that counted the queue
    # at every row queued: a count per new job and per handle set.
    """
    DROP TRIGGER jobs_fts_move;
    DROP TRIGGER handles_fts_move;
    """,
    # 10: a new job is found by its id above jobs_fts_top until the writer
    # moves it into the index, not by a queue row written per new job (see
    # _TEXT_MOVE); what was queued is moved in first.
    _NEW_BY_ID_MIGRATION,
    # 11: the age and updated indexes without the key. Their order among
    # rows of the same time was the key's, which is random: every write
    # of a group commit landed on another page of both indexes, and those
    # pages made most of what a commit writes to the WAL. SQLite ends every
    # index entry with the rowid (jobs.id), so ties are now in id order:
    # the rows a claim takes are neighbours there, and a group commit
    # rewrites a few pages. The console's pages and prune break ties by
    # id on SQLite (core/ledger/dialect.py, `tie`).
    """
    DROP INDEX jobs_status_age;
    CREATE INDEX jobs_status_age ON jobs(status, state_since);
    DROP INDEX jobs_updated;
    CREATE INDEX jobs_updated ON jobs(updated_at);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


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


async def _columns(db: aiosqlite.Connection, table: str) -> list[str]:
    async with db.execute(f"PRAGMA table_info({table})") as cur:
        return [r[1] for r in await cur.fetchall()]


async def repair_edited(db: aiosqlite.Connection, version: int) -> None:
    """Bring a ledger made by the first shipped text of a migration that was
    edited later to that migration's text as it is now (ledgers of
    each in tests/fixtures/ledgers/). Run before the numbered migrations, so
    migration 6 (which is this) reaches ledgers already past the edited one.

    - Migration 1 as 59899b5 shipped it keyed jobs, results and events by
      the job's key (d9a3aa4 gave jobs an integer id the others hang off):
      the three tables are rebuilt by migration 1's text, rows kept, each
      job's id its old rowid.
    - Migration 3 as 96ed141 shipped it lacked jobs.outside_streak (added
      to it by c5df902): the column is added."""
    columns = await _columns(db, "jobs")
    if "id" not in columns:
        for table in ("jobs", "results", "events"):
            await db.execute(f"ALTER TABLE {table} RENAME TO {table}_edited")
        for index in ("jobs_due", "jobs_status_age", "jobs_updated", "jobs_leased"):
            await db.execute(f"DROP INDEX IF EXISTS {index}")
        await db.execute("DROP INDEX IF EXISTS events_idem")
        for statement in migration_statements(MIGRATIONS[0]):
            await db.execute(statement)
        for number in range(1, min(version, 3)):  # 2, 3: columns of jobs
            for statement in migration_statements(MIGRATIONS[number]):
                await db.execute(statement)
        new = await _columns(db, "jobs")
        kept = ", ".join(c for c in new if c in columns)
        await db.execute(
            f"INSERT INTO jobs(id, {kept}) SELECT rowid, {kept} FROM jobs_edited ORDER BY rowid"
        )
        await db.execute(
            "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json,"
            " stored_at) SELECT j.id, r.idem, r.interaction_id, r.output_text, r.usage,"
            " r.raw_json, r.stored_at FROM results_edited AS r JOIN jobs AS j ON j.idem = r.idem"
        )
        await db.execute(
            "INSERT INTO events(id, at, job, idem, actor, from_status, to_status, note)"
            " SELECT e.id, e.at, j.id, e.idem, e.actor, e.from_status, e.to_status, e.note"
            " FROM events_edited AS e JOIN jobs AS j ON j.idem = e.idem ORDER BY e.id"
        )
        for table in ("results", "events", "jobs"):
            await db.execute(f"DROP TABLE {table}_edited")
        columns = await _columns(db, "jobs")
    if version >= 3 and "outside_streak" not in columns:
        await db.execute("ALTER TABLE jobs ADD COLUMN outside_streak INTEGER NOT NULL DEFAULT 0")
