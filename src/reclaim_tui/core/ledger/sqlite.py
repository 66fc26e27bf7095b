"""One aiosqlite connection to a ledger file, under the house's SQLite discipline.

STYLE.md §5, DESIGN.md §2: WAL, `synchronous=FULL`, `busy_timeout`,
autocommit connections with an explicit `BEGIN IMMEDIATE` for every
transaction that writes. Opening refuses a foreign or newer file before a
byte of it is written, then runs the numbered migrations of `core/ledger/schema.py`.
`Ledger` (core/ledger/base.py) adds the ledger's own statements on top.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote, unquote

import aiosqlite

from reclaim_tui.core.clock import Clock, SystemClock
from reclaim_tui.core.ledger.identity import (
    LEDGER_ID_SQL,
    marker_path,
    refuse_replaced,
    write_marker,
)
from reclaim_tui.core.ledger.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    map_sqlite_error,
    migration_statements,
)
from reclaim_tui.errors import (
    ConfigError,
    LedgerError,
    LedgerForeignError,
    LedgerReadOnlyError,
    LedgerVersionError,
)

__all__ = ["LedgerConnection", "db_secrets", "is_database_url", "pg_params", "shown_db"]

#: libpq's connection keywords (libpq 18's `PQconndefaults`): a `--db` whose
#: text starts with one of them and `=` (or has one after a space) is a
#: keyword DSN (`host=… dbname=… user=… password=…`), never a file name.
PG_KEYWORDS = frozenset(
    "application_name channel_binding client_encoding connect_timeout dbname"
    " fallback_application_name gssdelegation gssencmode gsslib host hostaddr keepalives"
    " keepalives_count keepalives_idle keepalives_interval krbsrvname load_balance_hosts"
    " max_protocol_version min_protocol_version oauth_client_id oauth_client_secret"
    " oauth_issuer oauth_scope options passfile password port replication require_auth"
    " requirepeer scram_client_key scram_server_key service ssl_max_protocol_version"
    " ssl_min_protocol_version sslcert sslcertmode sslcompression sslcrl sslcrldir sslkey"
    " sslkeylogfile sslmode sslnegotiation sslpassword sslrootcert sslsni"
    " target_session_attrs tcp_user_timeout user".split()
)
#: The keywords whose values are secrets: never shown, whatever they hold.
SECRET_KEYWORDS = frozenset(
    {"password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"}
)
_URL_SCHEMES = ("postgresql://", "postgres://")
_KEYWORD_DSN = re.compile(r"(?:^|\s)\s*(" + "|".join(sorted(PG_KEYWORDS)) + r")\s*=")
_HOW = (
    " (in a URL, percent-encode each special character of the user name and password, e.g."
    " `python3 -c 'import urllib.parse,getpass; print(urllib.parse.quote(getpass.getpass(),"
    ' safe=""))\'`; or give the password in PGPASSWORD or ~/.pgpass)'
)


def is_database_url(db: str) -> bool:
    """True for a PostgreSQL ledger: a URL (`postgresql://…`, `postgres://…`)
    or a libpq keyword DSN (`host=… dbname=… user=…`) — a ledger on a server
    (core/ledger/postgres.py), not a file."""
    return db.startswith(_URL_SCHEMES) or _KEYWORD_DSN.search(db) is not None


def pg_params(db: str) -> dict[str, str]:
    """The connection keywords of a PostgreSQL `--db`, parsed here rather than
    by libpq: libpq's parse errors quote the text they stumble on (a raw `%`
    in a password came back whole in "invalid percent-encoded token"), and its
    URL parse takes a raw `/` or `@` in a password as the host. Here the
    user:password part of a URL runs to its last `@`, so a password may hold
    any character, raw or percent-encoded (a `%` that starts no `%XX` is
    itself); a raw `@` after the host (in a query value) must be written
    `%40`. A text that cannot be read raises a ConfigError (exit 2) that
    never quotes a value."""
    if db.startswith(_URL_SCHEMES):
        return _url_params(db)
    return _keyword_params(db)


def _url_params(db: str) -> dict[str, str]:
    rest = db.split("://", 1)[1]
    params: dict[str, str] = {}
    at = rest.rfind("@")
    if at >= 0 and ":" not in rest[:at] and ("/" in rest[:at] or "?" in rest[:at]):
        # `postgresql://host/db?user=me@corp`: the `@` is the query's, not a
        # user's; as libpq reads it, the authority ends at the first `/`.
        first = min(i for i in (rest.find("@"), rest.find("/")) if i >= 0)
        at = first if rest[first] == "@" else -1
    if at >= 0:
        userinfo, rest = rest[:at], rest[at + 1 :]
        user, colon, password = userinfo.partition(":")
        if user:
            params["user"] = _decoded(user, "the user name")
        if colon and password:
            params["password"] = _decoded(password, "the password")
    hostpart, slash, tail = _cut(rest, "/?")
    path, _, query = tail.partition("?") if slash == "/" else ("", "", tail)
    if hostpart:
        hosts, ports = [], []
        for spec in hostpart.split(","):
            if spec.startswith("["):
                host, bracket, after = spec[1:].partition("]")
                if not bracket or (after and not after.startswith(":")):
                    raise ConfigError("--db: a PostgreSQL URL's [IPv6] host is not closed" + _HOW)
                port = after[1:]
            else:
                host, _, port = spec.partition(":")
            hosts.append(_decoded(host, "a host name"))
            ports.append(_decoded(port, "a port"))
        params["host"] = ",".join(hosts)
        if any(ports):
            params["port"] = ",".join(ports)
    if path:
        params["dbname"] = _decoded(path, "the database name")
    for item in query.split("&") if query else ():
        key, equals, value = item.partition("=")
        key = _decoded(key, "a parameter name")
        if not equals:
            raise ConfigError("--db: a PostgreSQL URL's query has a parameter without '='" + _HOW)
        if key == "ssl" and value == "true":  # libpq's alias, as in JDBC URLs
            key, value = "sslmode", "require"
        if key not in PG_KEYWORDS:
            raise ConfigError(
                "--db: a PostgreSQL URL's query has a parameter libpq does not know"
                " (the names: https://www.postgresql.org/docs/current/libpq-connect.html)" + _HOW
            )
        params[key] = _decoded(value, f"the value of {key}")
    return params


def _cut(text: str, stops: str) -> tuple[str, str, str]:
    """`text` split at the first of `stops`: (before, the stop, after)."""
    for i, ch in enumerate(text):
        if ch in stops:
            return text[:i], ch, text[i + 1 :]
    return text, "", ""


def _decoded(text: str, what: str) -> str:
    """Percent-decoded as libpq decodes a URL; a `%` that starts no `%XX`
    escape is taken as itself (a generated password's raw `%`)."""
    try:
        value = unquote(text, errors="strict") if "%" in text else text
    except UnicodeDecodeError:
        raise ConfigError(f"--db: {what} in the PostgreSQL URL is not UTF-8 once decoded") from None
    if "\x00" in value:
        raise ConfigError(f"--db: {what} in the PostgreSQL URL holds %00, which libpq refuses")
    return value


def _keyword_params(db: str) -> dict[str, str]:
    """libpq's `key=value …` grammar: a value is a run of non-blanks or a
    single-quoted text, `\\` escaping the next character in either."""
    params: dict[str, str] = {}
    i, n = 0, len(db)
    while True:
        while i < n and db[i].isspace():
            i += 1
        if i >= n:
            return params
        start = i
        while i < n and db[i] != "=" and not db[i].isspace():
            i += 1
        key = db[start:i]
        while i < n and db[i].isspace():
            i += 1
        if i >= n or db[i] != "=" or key not in PG_KEYWORDS:
            raise ConfigError(
                "--db: not a valid PostgreSQL key=value connection string: every word must be"
                " a libpq keyword and '=' (a value holding blanks, quotes or backslashes goes in"
                r" single quotes, with \' and \\ for a quote and a backslash inside)"
            )
        i += 1
        while i < n and db[i].isspace():
            i += 1
        value: list[str] = []
        quoted = i < n and db[i] == "'"
        i += quoted
        while i < n:
            ch = db[i]
            if ch == "\\" and i + 1 < n:
                value.append(db[i + 1])
                i += 2
                continue
            if (quoted and ch == "'") or (not quoted and ch.isspace()):
                break
            value.append(ch)
            i += 1
        if quoted:
            if i >= n:
                raise ConfigError(
                    "--db: a single-quoted value in the PostgreSQL key=value connection string"
                    " is not closed (write \\' for a quote inside it)"
                )
            i += 1
        params[key] = "".join(value)


def db_secrets(db: str) -> list[str]:
    """Every secret `db` holds (its passwords), as written and as decoded;
    the texts a message must never carry. Best effort on text that does not
    parse: the user:password part of a URL, a `password=` word."""
    if not is_database_url(db):
        return []
    found: set[str] = set()
    try:
        found.update(v for k, v in pg_params(db).items() if k in SECRET_KEYWORDS and v)
    except ConfigError:
        pass
    if db.startswith(_URL_SCHEMES):
        rest = db.split("://", 1)[1]
        userinfo = rest[: rest.rfind("@")] if "@" in rest else ""
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
        for key in SECRET_KEYWORDS:
            for m in re.finditer(rf"[?&]{key}=([^&]*)", rest):
                found.add(m.group(1))
    else:
        for key in SECRET_KEYWORDS:
            for m in re.finditer(rf"(?:^|\s){key}\s*=\s*('(?:[^'\\]|\\.)*'?|\S*)", db):
                found.add(m.group(1))
    encoded = {quote(s, safe="") for s in found}
    return sorted({s for s in found | encoded if s}, key=len, reverse=True)


def scrub(text: str, db: str) -> str:
    """`text` with every secret of `db` in it replaced by `***`."""
    for secret in db_secrets(db):
        text = text.replace(secret, "***")
    return text


def shown_db(db: str) -> str:
    """`db` as messages, titles and logs may show it: without its passwords.
    Built from the parsed keywords, so whatever characters a password holds,
    no part of it shows; a text that does not parse shows only its kind."""
    if not is_database_url(db):
        return db
    try:
        params = pg_params(db)
    except ConfigError:
        kind = db.split("://", 1)[0] + "://…" if "://" in db else "host=… (key=value)"
        return f"{kind} (unreadable)"
    if not db.startswith(_URL_SCHEMES):
        return " ".join(
            f"{k}=***" if k in SECRET_KEYWORDS else f"{k}={_quoted(v)}" for k, v in params.items()
        )
    user = params.pop("user", "")
    params.pop("password", None)
    host = params.pop("host", "")
    port = params.pop("port", "")
    dbname = params.pop("dbname", "")
    hosts = host.split(",") if host else []
    ports = port.split(",") if port else []
    netloc = ",".join(
        (f"[{h}]" if ":" in h else quote(h, safe="")) + (f":{p}" if p else "")
        for h, p in zip(hosts, ports + [""] * (len(hosts) - len(ports)), strict=False)
    )
    auth = f"{quote(user, safe='')}@" if user else ""
    query = "&".join(
        f"{k}=***" if k in SECRET_KEYWORDS else f"{k}={quote(v, safe='')}"
        for k, v in params.items()
    )
    scheme = db.split("://", 1)[0]
    return f"{scheme}://{auth}{netloc}/{quote(dbname, safe='')}" + (f"?{query}" if query else "")


def _quoted(value: str) -> str:
    if value and not any(c.isspace() or c in "'\\" for c in value):
        return value
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class LedgerConnection:
    """Opening, migrating, write transactions and locked reads over one
    connection; writes are serialised by an asyncio lock."""

    def __init__(
        self,
        db: aiosqlite.Connection,
        path: str,
        clock: Clock,
        *,
        readonly: bool,
    ) -> None:
        self._db = db
        self.path = path
        self.clock = clock
        self.readonly = readonly
        self._lock = asyncio.Lock()
        #: the ledger's own id (core/ledger/identity.py); None on PostgreSQL
        self.ledger_id: str | None = None

    # -- opening -----------------------------------------------------------------
    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        clock: Clock | None = None,
        busy_timeout: float = 10.0,
        readonly: bool = False,
        create: bool = True,
    ) -> Self:
        """Open (and migrate) a ledger. Raises a LedgerError subclass.

        A file that is not a reclaim-tui ledger, or one written by a newer
        version, is refused before a byte of it is written. A read-only open
        of a file on a read-only mount (where SQLite cannot create the WAL's
        shared-memory file) falls back to an immutable open."""
        spath = str(path)
        if is_database_url(spath):
            from reclaim_tui.core.ledger.postgres import PgLedger  # psycopg only when asked for

            opened = await PgLedger.open(
                spath, clock=clock, busy_timeout=busy_timeout, readonly=readonly, create=create
            )
            return opened  # type: ignore[return-value]
        if spath != ":memory:" and not create and not Path(spath).exists():
            marker = marker_path(spath)
            if marker.exists():  # `tick` would refuse: say why, not send them there
                known = marker.read_text(encoding="utf-8", errors="replace").strip()[:64]
                raise LedgerError(
                    f"{spath}: no ledger here, but {marker} says ledger {known} was: restore it"
                    f" from a backup (to start a new one, remove {marker})"
                )
            raise LedgerError(f"{spath}: no ledger here (run `tick` or `submit` first)")
        clock = clock or SystemClock()
        if spath != ":memory:" and not readonly:
            refuse_replaced(spath)  # a ledger was here: never start a new one over it
        try:
            return await cls._connect(spath, clock, busy_timeout, readonly, immutable=False)
        except LedgerReadOnlyError:
            if not readonly or not Path(spath).is_file():
                raise
            # https://www.sqlite.org/uri.html#uriimmutable: nothing is written,
            # not even the -shm file; right for a file nobody can write.
            return await cls._connect(spath, clock, busy_timeout, readonly, immutable=True)

    @classmethod
    async def _connect(
        cls, spath: str, clock: Clock, busy_timeout: float, readonly: bool, *, immutable: bool
    ) -> Self:
        uri = f"file:{spath}?mode=ro{'&immutable=1' if immutable else ''}" if readonly else spath
        connection = aiosqlite.connect(uri, uri=readonly, isolation_level=None)
        try:
            db = await connection
        except sqlite3.Error as exc:
            await _reap(connection)
            raise map_sqlite_error(exc, spath) from exc
        ledger = cls(db, spath, clock, readonly=readonly)
        try:
            await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            await ledger._inspect()  # before anything is written
            await ledger._configure()
            await ledger._migrate()
            await ledger._identify()
        except sqlite3.Error as exc:
            await db.close()
            raise map_sqlite_error(exc, spath) from exc
        except LedgerError:
            await db.close()
            raise
        return ledger

    async def _inspect(self) -> None:
        """Refuse a foreign or newer file while it is still untouched.

        The version and the table list are read in one read transaction: read
        apart, a process that migrates a brand-new file between the two reads
        shows us version 0 *and* its tables — a "foreign" ledger (CI saw this
        with eight ticks opening one new file at once)."""
        await self._db.execute("BEGIN")
        try:
            version = await self.schema_version()
            async with self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ) as cur:
                tables = {r[0] for r in await cur.fetchall()}
        finally:
            await self._db.execute("COMMIT")
        ours = {"jobs", "results", "events"}
        if tables and (version == 0 or not ours <= tables):
            listed = ", ".join(sorted(tables)[:8]) or "none"
            raise LedgerForeignError(
                f"{self.path}: not a reclaim-tui ledger (schema version {version}, tables:"
                f" {listed}); refusing to touch it — choose another --db"
            )
        if version > SCHEMA_VERSION:
            raise LedgerVersionError(
                f"{self.path}: written by a newer reclaim-tui (schema {version}, this "
                f"version knows up to {SCHEMA_VERSION}); upgrade reclaim-tui to open it"
            )

    async def _configure(self) -> None:
        if not self.readonly:
            # https://www.sqlite.org/wal.html — readers never block the writer.
            await self._db.execute("PRAGMA journal_mode = WAL")
        # FULL: a commit is on disk before COMMIT returns, also in WAL mode
        # (https://www.sqlite.org/pragma.html#pragma_synchronous).
        await self._db.execute("PRAGMA synchronous = FULL")
        await self._db.execute("PRAGMA foreign_keys = ON")
        # A 64 MiB page cache keeps the indexes of a large ledger in memory,
        # and a larger auto-checkpoint folds repeated writes of the same pages
        # (a row moves through 4 states) into one checkpoint write.
        await self._db.execute("PRAGMA cache_size = -65536")
        await self._db.execute("PRAGMA temp_store = MEMORY")
        if not self.readonly:
            await self._db.execute("PRAGMA wal_autocheckpoint = 8192")

    async def _migrate(self) -> None:
        version = await self.schema_version()
        if version == SCHEMA_VERSION or self.readonly:
            if version < SCHEMA_VERSION:
                raise LedgerError(f"{self.path}: ledger needs a migration; open it writable once")
            return
        async with self.write() as db:
            # Re-read inside the write lock: another process may have migrated.
            version = await self.schema_version()
            if version:
                await _repair_edited(db, version)
            for number in range(version, SCHEMA_VERSION):
                for statement in migration_statements(MIGRATIONS[number]):
                    await db.execute(statement)
            await db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    async def _identify(self) -> None:
        """The ledger's id (migration 6), and the marker beside its file saying it."""
        async with self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ) as cur:
            if await cur.fetchone() is None:
                return  # an old ledger opened read-only: no id until it is migrated
        async with self._db.execute(LEDGER_ID_SQL) as cur:
            row = await cur.fetchone()
        self.ledger_id = str(row[0]) if row else None
        if self.ledger_id and not self.readonly and self.path != ":memory:":
            write_marker(self.path, self.ledger_id)

    async def schema_version(self) -> int:
        async with self._db.execute("PRAGMA user_version") as cur:
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def pragmas(self) -> dict[str, Any]:
        """The durability settings this connection actually runs with."""
        out: dict[str, Any] = {}
        for name in ("journal_mode", "synchronous", "busy_timeout", "foreign_keys"):
            async with self._db.execute(f"PRAGMA {name}") as cur:
                row = await cur.fetchone()
            out[name] = row[0] if row else None
        return out

    async def close(self) -> None:
        await self._db.close()

    async def interrupt(self) -> None:
        """Abort the query now running on this connection (a console scan the
        operator replaced); it takes no lock, or it would wait for that query."""
        await self._db.interrupt()

    @property
    def connection(self) -> aiosqlite.Connection:
        return self._db

    # -- transactions ----------------------------------------------------------------
    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """A `BEGIN IMMEDIATE` transaction: the write lock is taken up front, so a
        busy ledger fails here (after busy_timeout), never half-way through."""
        if self.readonly:
            raise LedgerReadOnlyError(f"{self.path}: opened read-only")
        async with self._lock:
            try:
                await self._db.execute("BEGIN IMMEDIATE")
                yield self._db
                await self._db.execute("COMMIT")
            except BaseException as exc:
                # Also on cancellation: a statement already handed to
                # aiosqlite's thread runs anyway (a BEGIN cancelled while it
                # waited for the lock still opens the transaction), so queue a
                # ROLLBACK behind it — shielded, so a second cancel cannot
                # skip it — instead of trusting in_transaction right now.
                await asyncio.shield(self._abandon())
                if isinstance(exc, sqlite3.Error):
                    raise map_sqlite_error(exc, self.path) from exc
                raise

    async def _abandon(self) -> None:
        try:
            await self._db.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass  # no transaction was open: BEGIN failed, or COMMIT went through

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._lock:
            try:
                async with self._db.execute(sql, params) as cur:
                    return list(await cur.fetchall())
            except sqlite3.Error as exc:
                raise map_sqlite_error(exc, self.path) from exc


async def _columns(db: aiosqlite.Connection, table: str) -> list[str]:
    async with db.execute(f"PRAGMA table_info({table})") as cur:
        return [r[1] for r in await cur.fetchall()]


async def _repair_edited(db: aiosqlite.Connection, version: int) -> None:
    """Bring a ledger made by the first shipped text of a migration that was
    edited later to that migration's text as it is now (issue 23; ledgers of
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


async def _reap(connection: aiosqlite.Connection) -> None:
    """After a failed connect, aiosqlite's worker thread still has to answer
    the stop it was sent; it must do so while our loop is alive, or it dies
    with "Event loop is closed" printed on stderr as the process exits."""
    thread = getattr(connection, "_thread", None)
    if thread is not None:
        await asyncio.to_thread(thread.join, 5.0)
