"""A `--db` that names a PostgreSQL server rather than a file: telling them
apart, reading its connection keywords (libpq's reading, through
`psycopg.conninfo`, but for a URL's password: `pg_params`), and showing it
without its secrets (messages, titles, logs).

Telling a server from a file imports no driver: `core/ledger/opening.py`
reads a `--db` with `is_database_url` before psycopg is loaded; psycopg is
imported only to read a `--db` that names a server.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import quote, unquote

from reclaim_tui.errors import ConfigError

__all__ = ["db_secrets", "is_database_url", "pg_params", "scrub", "shown_db"]

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
_HOW = (
    " (in a URL, percent-encode each special character of the user name and password, e.g."
    " `python3 -c 'import urllib.parse,getpass; print(urllib.parse.quote(getpass.getpass(),"
    ' safe=""))\'`; or give the password in PGPASSWORD or ~/.pgpass)'
)


def is_database_url(db: str) -> bool:
    """True for a PostgreSQL ledger: a URL (`postgresql://…`, `postgres://…`)
    or a libpq keyword DSN (`host=… dbname=… user=…`) — a ledger on a server
    (core/ledger/postgres/ledger.py), not a file."""
    if db.startswith(_URL_SCHEMES):
        return True
    return "=" in db and _keyword_dsn().search(db) is not None


@functools.cache
def _keyword_dsn() -> re.Pattern[str]:
    """Compiled on first use: an alternation of every libpq keyword, a cost an
    idle tick's start-up need not pay for a `--db` that holds no `=`."""
    # (?<!\S), not (?:^|\s)\s*: a run of blanks is not tried once per way to split it.
    return re.compile(r"(?<!\S)(" + "|".join(sorted(PG_KEYWORDS)) + r")\s*=")


def pg_params(db: str) -> dict[str, str]:
    """The connection keywords of a PostgreSQL `--db`, as libpq reads them
    (`psycopg.conninfo.conninfo_to_dict`), so a `--db` means what it means
    to psql, with two differences, each on purpose:

    - A URL's user:password part runs to its last `@` (before the host), and
      any character in it is the password's, raw or percent-encoded (a `%`
      that starts no `%XX` is itself). libpq ends it at a raw `/` and reads
      the rest as host and port, so a generated password's `/`, `@` or `%`
      connected elsewhere and showed a piece of itself in the error. That
      part is read here, percent-encoded again, and the URL handed to libpq.
    - libpq's parse errors quote the text they stumble on (a password's
      raw `%` came back whole in "invalid percent-encoded token"): a text
      libpq cannot read raises a ConfigError (exit 2) that quotes nothing.
    """
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    url = db.startswith(_URL_SCHEMES)
    try:
        given = conninfo_to_dict(_reencoded(db) if url else db)
    except ProgrammingError:
        raise ConfigError(
            (
                "--db: libpq cannot read this PostgreSQL URL (its host, port, database or a"
                " query parameter: the names are libpq's,"
                " https://www.postgresql.org/docs/current/libpq-connect.html)" + _HOW
            )
            if url
            else (
                "--db: not a valid PostgreSQL key=value connection string: every word must be"
                " a libpq keyword and '=' (a value holding blanks, quotes or backslashes goes in"
                r" single quotes, with \' and \\ for a quote and a backslash inside)"
            )
        ) from None
    params = {k: str(v) for k, v in given.items()}
    if any("\x00" in v for v in params.values()):
        raise ConfigError("--db: a value in the PostgreSQL connection text holds %00 (NUL)")
    return params


def _reencoded(db: str) -> str:
    """`db` (a URL) with its user:password part read as `pg_params` says and
    percent-encoded again, for libpq."""
    scheme, rest = db.split("://", 1)
    at = rest.rfind("@")
    if at >= 0 and ":" not in rest[:at] and ("/" in rest[:at] or "?" in rest[:at]):
        # `postgresql://host/db?user=me@corp`: the `@` is the query's, not a
        # user's; as libpq reads it, the authority ends at the first `/`.
        first = min(i for i in (rest.find("@"), rest.find("/")) if i >= 0)
        at = first if rest[first] == "@" else -1
    if at < 0:
        return db
    user, colon, password = rest[:at].partition(":")
    userinfo = quote(_decoded(user, "the user name"), safe="")
    if colon:
        userinfo += ":" + quote(_decoded(password, "the password"), safe="")
    return f"{scheme}://{userinfo}@{rest[at + 1 :]}"


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
