"""The console filter's free text, planned over the trigram indexes (issue 14).

Migration 5 (core/schema.py) indexes each job's key and input (jobs_fts) and
its handle (handles_fts) by trigram. A filter text of 3+ characters becomes
the ids of the rows its rarest trigrams are in, plus the rows still queued
for the indexes: a superset, which core/queries.py narrows with the same
substring test the filter always used. How many ids there are picks how a
page is read (`TextPlan`).

This module is part of the core: it must not import Textual.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from reclaim_tui.core.ledger import Ledger

__all__ = ["FTS_BY_ID", "FTS_IN_WALK", "FTS_MIN", "TextPlan", "text_plan", "trigrams"]

#: Filter text this long is looked up in the trigram index; shorter text has
#: no trigram to look up and is a substring test on every row walked.
FTS_MIN = 3
#: Up to this many index hits are read by id and sorted (~2.5 µs each).
FTS_BY_ID = 15_000
#: Up to this many, the sort's index is walked keeping the rows among them
#: (a lookup per row walked, no read of the row). Past it the text is
#: common: the walk tests each row's text, and a page fills soon (≈ page ×
#: rows / matches rows walked). Both limits are about where the costs cross
#: at 1M rows (benchmarks/console_load.py).
FTS_IN_WALK = 30_000

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
# (A trigram in every row costs ~10 ms to intersect at 1M rows; one in 1 %
# of them 0.5 ms: looking up only the rarest is what keeps a long phrase
# of common words plus one rare part fast.)
_RARITY_SQL = """
    SELECT
        (SELECT CASE WHEN COUNT(*) < ?2 THEN COUNT(*)
                ELSE ?2 * (SELECT MAX(id) FROM jobs) / MAX(rowid) END
         FROM (SELECT rowid FROM jobs_fts WHERE jobs_fts MATCH t.value LIMIT ?2)),
        (SELECT CASE WHEN COUNT(*) < ?2 THEN COUNT(*)
                ELSE ?2 * (SELECT MAX(id) FROM jobs) / MAX(rowid) END
         FROM (SELECT rowid FROM handles_fts WHERE handles_fts MATCH t.value LIMIT ?2))
    FROM json_each(?1) AS t ORDER BY t.key
"""

# The hits of a text filter, as a JSON list of ids, and how many: what each
# index finds for its MATCH expression, and every row still queued for them
# (its indexed values may be stale: the substring test decides).
_HITS_SQL = (
    "SELECT COUNT(*), json_group_array(id) FROM ("
    "SELECT rowid AS id FROM jobs_fts WHERE jobs_fts MATCH ?1"
    " UNION ALL SELECT rowid FROM handles_fts WHERE handles_fts MATCH ?2"
    " UNION ALL SELECT id FROM jobs_fts_pending UNION ALL SELECT id FROM handles_fts_pending"
    " LIMIT ?3)"
)


@dataclass(frozen=True, slots=True)
class TextPlan:
    """How a page finds the rows holding the filter text. `hits`: a JSON list
    of the ids the trigram indexes name for it; None: no list (text too short
    for a trigram, or in too many rows), the walk of the sort's index tests
    every row's text. `by_id`: few hits, read each by id and sort them,
    rather than walk the sort's index keeping the rows among them."""

    hits: str | None = None
    by_id: bool = False

    @property
    def ids(self) -> list[int]:
        return json.loads(self.hits) if self.hits is not None else []


_WALK = TextPlan()


def trigrams(text: str) -> list[str]:
    """The distinct trigrams of `text`, each an FTS5 string (its quotes
    doubled); at most _CONSIDERED, spread over a long text; none when `text`
    is shorter than FTS_MIN."""
    if len(text) < FTS_MIN:
        return []
    last = len(text) - 3
    step = -(-(last + 1) // _CONSIDERED)  # ceil
    starts = [*range(0, last + 1, step), last]
    return list(dict.fromkeys('"' + text[i : i + 3].replace('"', '""') + '"' for i in starts))


async def text_plan(ledger: Ledger, text: str) -> TextPlan:
    """How to find the filter text: each index is asked for the rows holding
    its rarest trigrams of the text, and the plan follows from how many rows
    that is (the count stops past FTS_IN_WALK)."""
    terms = trigrams(text)
    if not terms:
        return _WALK
    rarity = await ledger.select(_RARITY_SQL, [json.dumps(terms), _SAMPLE])
    matches = [_rarest(terms, counts) for counts in zip(*rarity, strict=True)]
    [(count, hits)] = await ledger.select(_HITS_SQL, [*matches, FTS_IN_WALK + 1])
    if count > FTS_IN_WALK:
        return _WALK
    return TextPlan(hits=hits, by_id=count <= FTS_BY_ID)


def _rarest(terms: Sequence[str], counts: Sequence[int]) -> str:
    """The MATCH expression of the rarest terms, rarest first."""
    ranked = sorted(range(len(terms)), key=counts.__getitem__)
    limit = max(counts[ranked[0]], 1) * _COMMONER
    return " AND ".join(terms[i] for i in ranked[:_LOOKED_UP] if counts[i] <= limit)
