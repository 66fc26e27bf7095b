"""A PostgreSQL `--db` is read by libpq (`psycopg.conninfo`), so it means
what it means to psql; the two differences on purpose (core/ledger/urls.py
`pg_params`) are checked against libpq's own reading here."""

from __future__ import annotations

import pytest
from psycopg import ProgrammingError
from psycopg.conninfo import conninfo_to_dict

from reclaim_tui.core.ledger.urls import pg_params, shown_db
from reclaim_tui.errors import ConfigError

#: Connection texts whose user:password part holds nothing libpq splits.
AS_PSQL = [
    "postgresql://me:s3cret@db.example:6432/ledger?sslmode=require",
    "postgres://me@db.example/ledger?application_name=a%20b&options=-c%20x%3Dy",
    "postgresql://[::1]:5433,h2/d?target_session_attrs=read-write",
    "postgresql://h/d?ssl=true",
    "postgresql:///ledger?host=/var/run/postgresql",
    "postgresql://%2Fvar%2Frun%2Fpostgresql/ledger",
    "postgresql://host/db?user=me@corp",
    "postgresql://h/d?dbname=other&port=7",
    "host=h port=5432 dbname=x user=me password='it\\'s a\\\\ b'",
    "host = h  service=ledger sslmode=verify-full",
    "dbname=x options='-csearch_path=\"My S\",public'",
]


@pytest.mark.parametrize("db", AS_PSQL)
def test_a_db_means_what_it_means_to_libpq(db: str) -> None:
    assert pg_params(db) == conninfo_to_dict(db)


@pytest.mark.parametrize(
    ("db", "password"),
    [
        ("postgresql://me:a/b@db.example:6432/ledger", "a/b"),
        ("postgresql://me:a@b@db.example:6432/ledger", "a@b"),
        ("postgresql://me:a%zzb@db.example:6432/ledger", "a%zzb"),
        ("postgresql://me:a b@db.example:6432/ledger", "a b"),
    ],
)
def test_on_purpose_a_urls_password_runs_to_its_last_at(db: str, password: str) -> None:
    """Difference 1: libpq reads a raw `/` or the first `@` as the end of
    the user:password part (another host, a piece of the password shown),
    or refuses a raw `%` or blank; here they are the password's."""
    try:
        libpq = conninfo_to_dict(db)
    except ProgrammingError:
        libpq = {}
    assert libpq.get("password") != password
    assert pg_params(db) == {
        "user": "me",
        "password": password,
        "host": "db.example",
        "port": "6432",
        "dbname": "ledger",
    }
    assert password not in shown_db(db)


@pytest.mark.parametrize(
    "db",
    [
        "postgresql://h/d?password=%zzQXZJsecret",
        "postgresql://h/d?password=QXZJsecret&nosuch=1",
        "host=h password=QXZJ secret",
        "host=h password='QXZJsecret",
    ],
)
def test_on_purpose_an_unreadable_db_is_refused_without_quoting_it(db: str) -> None:
    """Difference 2: libpq's parse errors quote the text they stumble on;
    the ConfigError quotes nothing of it."""
    with pytest.raises(ConfigError) as caught:
        pg_params(db)
    assert "QXZJ" not in str(caught.value) and "secret" not in str(caught.value)
    assert "QXZJ" not in shown_db(db)


def test_libpq_itself_quotes_what_it_cannot_read() -> None:
    """Why difference 2 exists: libpq's message holds the password."""
    with pytest.raises(ProgrammingError) as caught:
        conninfo_to_dict("postgresql://h/d?password=%zzQXZJsecret")
    assert "QXZJsecret" in str(caught.value)
