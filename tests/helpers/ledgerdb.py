"""Reading a ledger file directly (plain sqlite3, read-only), for assertions.

The tests look at the file itself, not through the code under test: rows,
the events timeline and stored results, and they check it against the
emulator's independent create log.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ALLOWED_TRANSITIONS",
    "TERMINAL",
    "LedgerView",
    "account_for_creates",
]

TERMINAL = frozenset({"consumed", "failed", "cancelled"})

#: Every (from, to) pair an events row may show: DESIGN.md §2's machine, its
#: self-loops (attempt notes, polls, sink failures, orphan handling) and the
#: operator edges (retry, cancel, adopt).
ALLOWED_TRANSITIONS = frozenset(
    {
        (None, "reserving"),
        ("reserving", "reserving"),
        ("reserving", "submitted"),
        ("reserving", "failed"),
        ("reserving", "cancelled"),
        ("submitted", "submitted"),
        ("submitted", "done"),
        ("submitted", "failed"),
        ("submitted", "cancelled"),
        ("submitted", "reserving"),
        ("done", "done"),
        ("done", "consumed"),
        ("failed", "reserving"),
        ("failed", "submitted"),
        ("cancelled", "reserving"),
        ("cancelled", "cancelled"),
        # A cancel that reached an interaction already completed keeps its result.
        ("cancelled", "submitted"),
        # Notes on a settled row: a late create of a holder that lost its
        # lease is recorded (and cancelled) whatever the row became since.
        ("failed", "failed"),
        ("consumed", "consumed"),
    }
)

DUPLICATE_NOTE = "possible duplicate"
#: The note of an orphan failed with its last attempt's outcome unknown: the
#: ledger says an interaction may exist, like a possible duplicate.
UNKNOWN_FINAL_NOTE = "unknown; attempts exhausted"
_EVENT_COLUMNS = "id, at, idem, actor, from_status, to_status, note"


@dataclass(frozen=True)
class EventRow:
    id: int
    at: float
    idem: str
    actor: str
    from_status: str | None
    to_status: str | None
    note: str


class LedgerView:
    """A snapshot reader of one ledger file."""

    def __init__(self, db: Path | str) -> None:
        self.url = str(db) if str(db).startswith("postgresql://") else None
        self.db = Path(db)

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        if self.url is not None:
            return _pg_query(self.url, sql, params)
        if not self.db.exists():
            return []
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        conn.row_factory = sqlite3.Row
        try:
            return list(conn.execute(sql, tuple(params)))
        finally:
            conn.close()

    def rows(self) -> dict[str, dict[str, Any]]:
        return {r["idem"]: dict(r) for r in self._query("SELECT * FROM jobs ORDER BY idem")}

    def events(self, idem: str | None = None) -> list[EventRow]:
        sql = f"SELECT {_EVENT_COLUMNS} FROM events"
        if idem is None:
            found = self._query(sql + " ORDER BY id")
        else:
            found = self._query(sql + " WHERE idem = ? ORDER BY id", (idem,))
        return [EventRow(**dict(r)) for r in found]

    def events_by_idem(self) -> dict[str, list[EventRow]]:
        out: dict[str, list[EventRow]] = {}
        for event in self.events():
            out.setdefault(event.idem, []).append(event)
        return out

    def results(self) -> dict[str, dict[str, Any]]:
        return {r["idem"]: dict(r) for r in self._query("SELECT * FROM results")}

    def status_counts(self) -> Counter[str]:
        return Counter(
            {
                r["status"]: r["n"]
                for r in self._query("SELECT status, COUNT(*) AS n FROM jobs GROUP BY status")
            }
        )

    def quiescent(self) -> bool:
        """Every row terminal, or an orphan held for an operator."""
        return all(
            r["status"] in TERMINAL or (r["status"] == "reserving" and r["held"])
            for r in self.rows().values()
        )

    def seconds_until_due(self) -> float | None:
        due = [
            r["next_at"]
            for r in self.rows().values()
            if r["status"] not in TERMINAL and not r["held"]
        ]
        return (min(due) - time.time()) if due else None

    def seconds_until_workable(self) -> float | None:
        """As `seconds_until_due`, and a row's lease ended too: a row a killed
        host claimed waits for its lease, which no tick can take sooner when
        its holder is on another host."""
        due = [
            max(r["next_at"], r["lease_until"] or 0.0)
            for r in self.rows().values()
            if r["status"] not in TERMINAL and not r["held"]
        ]
        return (min(due) - time.time()) if due else None

    def fingerprint(self) -> tuple[Any, ...]:
        keep = ("idem", "status", "handle", "attempts", "polls", "duplicates", "held", "inflight")
        rows = tuple(tuple(r[k] for k in keep) for r in self.rows().values())
        last = self._query("SELECT COALESCE(MAX(id), 0) AS m FROM events")
        return rows, last[0]["m"] if last else 0

    # -- checks ------------------------------------------------------------------------
    def bad_transitions(self) -> list[EventRow]:
        return [e for e in self.events() if (e.from_status, e.to_status) not in ALLOWED_TRANSITIONS]

    def consumed_without_done(self) -> list[str]:
        """Consumed rows whose timeline has no `done` before `consumed`, or no result."""
        results = self.results()
        timelines = self.events_by_idem()
        bad = []
        for idem, row in self.rows().items():
            if row["status"] != "consumed":
                continue
            changes = timelines.get(idem, [])
            order = [e.to_status for e in changes if e.from_status != e.to_status]
            if "done" not in order or order.index("done") > order.index("consumed"):
                bad.append(idem)
            elif idem not in results:
                bad.append(idem)
        return bad

    def duplicate_notes(self, idem: str) -> int:
        return sum(1 for e in self.events(idem) if DUPLICATE_NOTE in e.note)


def _pg_query(url: str, sql: str, params: Iterable[Any]) -> list[Any]:
    """The same reads on a PostgreSQL ledger (plain psycopg, its own
    connection): rows as dicts, an empty list before the schema exists."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("SET search_path TO reclaim_tui")
        try:
            return list(conn.execute(sql.replace("?", "%s"), tuple(params)).fetchall())
        except psycopg.errors.UndefinedTable:
            return []


def account_for_creates(
    view: LedgerView, creates_by_idem: dict[str, list[dict[str, Any]]]
) -> list[str]:
    """Problems: interactions the emulator created that the ledger cannot explain.

    An interaction is accounted for when it is its row's handle, when the
    row's timeline names it (created / adopted / gone / previous interaction),
    or when the timeline records a possible duplicate for it (an unknown
    outcome resubmitted, or failed with attempts exhausted: the ledger cannot
    know the id it never received).
    """
    rows = view.rows()
    timelines = view.events_by_idem()
    problems = []
    for idem, entries in creates_by_idem.items():
        row = rows.get(idem)
        if row is None:
            problems.append(f"{idem}: {len(entries)} interaction(s) created, no ledger row")
            continue
        events = timelines.get(idem, [])
        text = "\n".join(e.note for e in events)
        unnamed = [e["id"] for e in entries if e["id"] != row["handle"] and e["id"] not in text]
        duplicates = sum(
            1 for e in events if DUPLICATE_NOTE in e.note or UNKNOWN_FINAL_NOTE in e.note
        )
        if len(unnamed) > duplicates:
            problems.append(
                f"{idem}: interactions {unnamed} unexplained"
                f" ({duplicates} possible duplicate(s) recorded, handle {row['handle']})"
            )
    return problems
