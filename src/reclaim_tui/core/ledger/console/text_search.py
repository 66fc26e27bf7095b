"""The console filter's free text, planned over the trigram indexes.

Migration 5 (core/ledger/sqlite/schema.py) indexes each job's key and input (jobs_fts) and
its handle (handles_fts) by trigram. A filter text of 3+ characters becomes
the ids of the rows its rarest trigrams are in, plus the rows still queued
for the indexes and those added since the indexes were last moved into
(migration 10): a superset, which core/ledger/console/queries.py reads by id
and narrows with the same substring test the filter always used. Text too short for a
trigram, or in too many rows, gets no ids: the page walks the sort's index
testing each row, as it always did.

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.port import Ledger

__all__ = ["FTS_BY_ID", "FTS_MIN", "TEXT_SQL", "like_pattern", "text_hits", "trigrams"]


def like_pattern(text: str) -> str:
    """`text` anywhere, as a LIKE pattern (ESCAPE '\\')."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


#: The filter's substring test, one pattern three times (positional
#: parameters: it is spliced among other clauses). LIKE folds ASCII case only, as it always
#: did (PostgreSQL: ILIKE on "C"-collated text, the same rule).
TEXT_SQL = Sql(
    lambda d: (
        f"(idem {d.like} {d.p} ESCAPE '\\' OR handle {d.like} {d.p} ESCAPE '\\'"
        f" OR {d.input_text('spec')} {d.like} {d.p} ESCAPE '\\')"
    )
)

#: Filter text this long is looked up in the trigram index; shorter text has
#: no trigram to look up and is a substring test on every row walked.
FTS_MIN = 3
#: Hits are read by id and sorted while there are at most this many times
#: √rows of them. Reading a hit costs a little less than testing a row; the
#: walk that tests each row finds a page after ≈ page × rows / hits rows (and
#: one walk per status in the age sort). With the two costs measured by
#: benchmarks/console_load.py, they cross between 13·√rows (one walk) and
#: 32·√rows (six).
FTS_BY_ID = 20

#: A long filter text is looked up by at most this many of its trigrams.
_CONSIDERED = 48
#: … of which the rarest, and up to this many in all, are looked up together
#: (AND), leaving out those in over _COMMONER times as many rows: reading
#: their postings would cost more than they narrow.
_LOOKED_UP = 3
_COMMONER = 10
#: A trigram's first matches counted to tell how common it is.
_SAMPLE = 1000

# How many rows each trigram is in, per index: exact below _SAMPLE, else
# extrapolated from how far into the ids its first _SAMPLE matches reach.
# (Intersecting a trigram costs in proportion to the rows it is in: looking
# up only the rarest is what keeps a long phrase of common words plus one
# rare part fast.)
_RARITY_SQL = """
    SELECT
        (SELECT CASE WHEN COUNT(*) < ?2 THEN COUNT(*)
                ELSE ?2 * (SELECT MAX(id) FROM jobs) / MAX(rowid) END
         FROM (SELECT rowid FROM jobs_fts WHERE jobs_fts MATCH t.value LIMIT ?2)),
        (SELECT CASE WHEN COUNT(*) < ?2 THEN COUNT(*)
                ELSE ?2 * (SELECT MAX(id) FROM jobs) / MAX(rowid) END
         FROM (SELECT rowid FROM handles_fts WHERE handles_fts MATCH t.value LIMIT ?2)),
        (SELECT MAX(id) FROM jobs)
    FROM json_each(?1) AS t ORDER BY t.key
"""

# The hits of a text filter, as a JSON list of ids, and how many: what each
# index finds for its MATCH expression, and every row still queued for them
# (its indexed values may be stale: the substring test decides), new rows
# (above jobs_fts_top) included.
_HITS_SQL = (
    "SELECT COUNT(*), json_group_array(id) FROM ("
    "SELECT rowid AS id FROM jobs_fts WHERE jobs_fts MATCH ?1"
    " UNION ALL SELECT rowid FROM handles_fts WHERE handles_fts MATCH ?2"
    " UNION ALL SELECT id FROM jobs_fts_pending UNION ALL SELECT id FROM handles_fts_pending"
    " UNION ALL SELECT id FROM jobs WHERE id > (SELECT top FROM jobs_fts_top)"
    " LIMIT ?3)"
)


def trigrams(text: str) -> list[str]:
    """The distinct trigrams of `text`, each an FTS5 string (its quotes
    doubled); at most _CONSIDERED, spread over a long text; none when `text`
    is shorter than FTS_MIN. A trigram holding NUL is left out: FTS5 ends a
    MATCH string there ("unterminated string", a filter pasted with one was
    refused); the others still narrow (none left: the walk tests each row)."""
    if len(text) < FTS_MIN:
        return []
    last = len(text) - 3
    step = -(-(last + 1) // _CONSIDERED)  # ceil
    starts = [*range(0, last + 1, step), last]
    chosen = (text[i : i + 3] for i in starts)
    return list(dict.fromkeys('"' + t.replace('"', '""') + '"' for t in chosen if "\0" not in t))


async def text_hits(ledger: Ledger, text: str) -> str | None:
    """The ids of the rows that may hold `text`, as a JSON list: each index
    is asked for the rows holding its rarest trigrams of the text. None when
    the text is too short for a trigram or in too many rows to read by id."""
    terms = trigrams(text)
    if not terms:
        return None
    if ledger.dialect == "postgres":
        return await _pg_hits(ledger, text)
    rarity = await ledger.select(_RARITY_SQL, [json.dumps(terms), _SAMPLE])
    matches = [_rarest(terms, [row[column] for row in rarity]) for column in (0, 1)]
    limit = int(FTS_BY_ID * math.sqrt(rarity[0][2] or 0))
    [(count, hits)] = await ledger.select(_HITS_SQL, [*matches, limit + 1])
    return str(hits) if count <= limit else None


async def _pg_hits(ledger: Ledger, text: str) -> str | None:
    """PostgreSQL: the rows holding `text`, found once on the trigram index of
    the ledger's text table (core/ledger/postgres/job_text.py). Left to the page
    query, the same lookup ran in each status's branch of the age sort, six
    times; this is one lookup. A role not granted that table (granted by hand
    before it existed) tests the rows of `jobs` instead: the same ids."""
    [(top, readable)] = await ledger.select(
        "SELECT (SELECT COALESCE(MAX(id), 0) FROM jobs), has_table_privilege('job_text', 'SELECT')"
    )
    limit = int(FTS_BY_ID * math.sqrt(top))
    pattern = like_pattern(text)
    if readable:
        rows = await ledger.select(_PG_TEXT_HITS, [pattern, limit + 1])
    else:
        rows = await ledger.select(_PG_ROW_HITS, [pattern] * 3 + [limit + 1])
    return json.dumps([r[0] for r in rows]) if len(rows) <= limit else None


_PG_TEXT_HITS = Sql(
    lambda d: f"SELECT DISTINCT job FROM job_text WHERE text {d.like} {d.p} ESCAPE '\\' LIMIT {d.p}"
)
_PG_ROW_HITS = Sql(lambda d: f"SELECT id FROM jobs WHERE {TEXT_SQL.of(d)} LIMIT {d.p}")


def _rarest(terms: Sequence[str], counts: Sequence[int]) -> str:
    """The MATCH expression of the rarest terms, rarest first."""
    ranked = sorted(range(len(terms)), key=counts.__getitem__)
    limit = max(counts[ranked[0]], 1) * _COMMONER
    return " AND ".join(terms[i] for i in ranked[:_LOOKED_UP] if counts[i] <= limit)
