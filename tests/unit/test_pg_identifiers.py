"""PostgreSQL identifiers are quoted by psycopg (`psycopg.sql.Identifier`),
in statements and in the names messages and settings say."""

from __future__ import annotations

import pytest

from reclaim_tui.core.ledger.postgres.connect import quote_ident
from reclaim_tui.core.ledger.postgres.grants import grant_statements
from reclaim_tui.core.ledger.postgres.search_path import schema_for


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        ("reclaim_tui", '"reclaim_tui"'),
        ('we"ird', '"we""ird"'),
        ("Two Words", '"Two Words"'),
        ("ünï", '"ünï"'),
    ],
)
def test_a_name_is_quoted_as_postgresql_reads_it(name: str, quoted: str) -> None:
    assert quote_ident(name) == quoted


def test_grants_quote_every_name() -> None:
    got = grant_statements('app "s"', "own er", 'r"o')
    assert got[0] == 'GRANT USAGE ON SCHEMA "app ""s""" TO "r""o";'
    assert got[3] == (
        'ALTER DEFAULT PRIVILEGES FOR ROLE "own er" IN SCHEMA "app ""s""" GRANT'
        ' SELECT, INSERT, UPDATE, DELETE ON TABLES TO "r""o";'
    )
    assert len(got) == 5 and all('"app ""s"""' in s for s in got)


def test_a_search_path_keeps_quoted_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECLAIM_PG_SCHEMA", raising=False)
    url = "postgresql://h/db?options=-csearch_path%3D%22My%22%22S%22,public"
    assert schema_for(url) == ('My"S', '"My""S", "public"')
