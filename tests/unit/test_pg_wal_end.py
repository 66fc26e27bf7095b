"""The WAL's end the WAL-counting tests read to (tests/helpers/pg_wal.py):
accepted by pg_walinspect while another session has written WAL it has not
committed, the moment `pg_current_wal_lsn()` runs ahead of the flush and
`pg_get_wal_records_info(start, pg_current_wal_lsn())` is refused ("cannot
accept future end LSN", seen in a full run under load)."""

from __future__ import annotations

import psycopg
import pytest

from tests.helpers.pg_wal import readable_wal_end

pytestmark = pytest.mark.postgres


def test_the_end_is_flushed_while_another_session_writes_uncommitted(pg_dsn: str) -> None:
    with (
        psycopg.connect(pg_dsn, autocommit=True) as reader,
        psycopg.connect(pg_dsn) as writer,
    ):
        reader.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA public")
        reader.execute("SET search_path = public")
        reader.execute("CREATE TABLE filler (n int, pad text)")
        start = str(reader.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0])  # type: ignore[index]
        ends = []
        for round_ in range(3):
            # More WAL than its buffers hold: written out, not flushed, until a commit.
            writer.execute(
                "INSERT INTO filler SELECT n, repeat('x', 200) FROM generate_series(1, 40000) n"
            )
            end = readable_wal_end(reader)
            flushed = reader.execute(
                "SELECT pg_current_wal_flush_lsn() >= %s::pg_lsn", (end,)
            ).fetchone()
            assert flushed == (True,), round_
            (count,) = reader.execute(  # type: ignore[misc]
                "SELECT count(*) FROM pg_get_wal_records_info(%s::pg_lsn, %s::pg_lsn)",
                (start, end),
            ).fetchone()
            ends.append(end)
            assert count > 0
        writer.rollback()
    assert len(set(ends)) == 3  # each round's records were behind its end
