"""Retention: delete finished jobs older than a cut-off, archived first if asked.

The ledger keeps every job it was given; without pruning it grows for ever
(Oban's Pruner and Sidekiq's clear exist for the same reason). `prune`
deletes *terminal* rows — `consumed`, and on request `failed` and
`cancelled` — whose `state_since` lies before `now - older_than_s`:

- **`state_since`, not `updated_at`**: it is "in this status since", the
  clock a retention rule means (a consumed row's age is how long it has been
  consumed), and it is what the console's age sort shows. `jobs_status_age`
  (status, state_since, then id on SQLite, the key on PostgreSQL) serves
  the batches as an index range, oldest first, with no sort.
- **Never `reserving`, `submitted` or `done`**: their work (a create whose
  outcome may be unknown, an interaction to collect, a result not yet
  delivered) is not finished; asking for them is a ConfigError.
- **What goes with a job**: its events and its stored result (both keyed by
  the job's id). The webhook inbox's rows that name the job keep their
  place but lose the name (`job = NULL`): the row's `webhook-id` is what
  makes a redelivered event a no-op, so deleting it would let an old event
  be kept again; and an event still naming a pruned key could be taken as
  news of a later job reserved under the same key (a jobs file passed
  again after the prune), adopting an interaction of the pruned job. On
  SQLite the FTS5 triggers queue the deleted rows out of the text index in
  the same transaction (core/ledger/sqlite/schema.py), so the filter stops finding them.
- **Batches**: `batch` rows per transaction, so the ledger's write lock is
  never held for more than one batch (other writers wait at most that).
- **Archive first**: with `archive`, each batch's rows — every column, the
  stored result and interaction, the timeline (`export.job_record`) — are
  appended to a JSON Lines file and fsync'd inside the batch's transaction,
  before its delete commits. A kill between the two leaves the rows in the
  ledger *and* in the archive; the next prune archives them again. Such a
  copy is recognisable: an earlier line with the same `idem` and
  `updated_at` (a row's `updated_at` changes with every write), with the
  same content but for `pruned_at`. Keep the last line of each key.
  An existing archive is appended to (one file may hold every month's
  prune); its file name is fsync'd in its folder when it is created. A
  last line cut short by a kill mid-write (its batch was not deleted) is
  cut off by the next prune before it appends. An archive that cannot be
  written stops the prune with a ConfigError, its batch not deleted; one
  that is the ledger or a file beside it (core/ledger/identity.py's
  `refuse_ledger_file`) is refused before a row is read.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reclaim_tui.core.crash import crashpoint
from reclaim_tui.core.export import iso_time
from reclaim_tui.core.ledger.base import LedgerBase
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.identity import refuse_ledger_file
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.prune_archive import append_synced, archive_lines
from reclaim_tui.core.ledger.schema import COLUMNS, row_from_tuple
from reclaim_tui.core.models import TERMINAL_STATUSES, Row, Status
from reclaim_tui.core.row_notes import is_pending
from reclaim_tui.errors import ConfigError, OperatorError

__all__ = [
    "DEFAULT_BATCH",
    "PRUNABLE",
    "PruneCount",
    "PruneReport",
    "count_prunable",
    "discard",
    "parse_age",
    "prunable_statuses",
    "prune",
]

#: The units of an age (`--older-than`, the console's `:prune`), in seconds.
AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(value: str) -> float:
    """An age: `30d`, `12h`, `90m`, `45s`, `2w`, or plain seconds; ValueError
    says what an age looks like."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhdw]?)", value.strip().lower())
    if found is None:
        raise ValueError(
            f"{value!r} is not an age: a number of seconds, or a number followed by"
            " s, m, h, d or w (30d, 12h, 90m)"
        )
    age = float(found[1]) * AGE_UNITS[found[2]]
    if age > MAX_AGE:
        raise ValueError(f"{value!r}: an age of more than a century")
    return age


#: Seconds between two batches (see `prune`).
BATCH_PAUSE = 0.05
#: The longest age `parse_age` accepts: a century (past it, a cut-off is no date).
MAX_AGE = 100 * 365 * 86400.0

#: Rows deleted per transaction.
DEFAULT_BATCH = 1000
#: The statuses `prune` may delete, in the order it deletes them.
PRUNABLE = tuple(s for s in Status if s in TERMINAL_STATUSES)


@dataclass(frozen=True, slots=True)
class PruneCount:
    """The rows a prune would delete: how many per status, their state_since range."""

    cutoff: float
    by_status: dict[str, int]
    oldest: float | None
    newest: float | None

    @property
    def count(self) -> int:
        return sum(self.by_status.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "by_status": dict(self.by_status),
            "cutoff": iso_time(self.cutoff),
            "oldest": iso_time(self.oldest),
            "newest": iso_time(self.newest),
        }


@dataclass(slots=True)
class PruneReport:
    """What a prune deleted (and archived)."""

    cutoff: float
    by_status: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    oldest: float | None = None
    newest: float | None = None
    archive: Path | None = None
    #: lines appended to the archive (equal to `pruned` unless a batch failed)
    archived: int = 0

    @property
    def pruned(self) -> int:
        return sum(self.by_status.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "pruned": self.pruned,
            "by_status": dict(self.by_status),
            "batches": self.batches,
            "cutoff": iso_time(self.cutoff),
            "oldest": iso_time(self.oldest),
            "newest": iso_time(self.newest),
            "archive": str(self.archive) if self.archive is not None else None,
            "archived": self.archived,
        }

    def _count(self, rows: Sequence[Row]) -> None:
        for row in rows:
            status = row.status.value
            self.by_status[status] = self.by_status.get(status, 0) + 1
        times = [row.state_since for row in rows]
        self.oldest = min(times if self.oldest is None else [self.oldest, *times])
        self.newest = max(times if self.newest is None else [self.newest, *times])


def prunable_statuses(statuses: Collection[Status | str]) -> list[Status]:
    """`statuses` as Status values in PRUNABLE order; a ConfigError for an
    empty list or a status whose work is not finished."""
    wanted = {Status(s) for s in statuses}
    if not wanted:
        raise ConfigError("prune: no status to prune")
    refused = sorted(s.value for s in wanted - TERMINAL_STATUSES)
    if refused:
        raise ConfigError(
            f"prune deletes only finished rows (consumed, failed, cancelled), not"
            f" {', '.join(refused)}: a reserving row may have a create in flight, a"
            " submitted one an interaction to collect, a done one a result not yet delivered"
        )
    return [s for s in PRUNABLE if s in wanted]


def _cutoff(older_than_s: float, now: float) -> float:
    if older_than_s < 0:
        raise ConfigError("prune: the age must not be negative")
    return now - older_than_s


async def count_prunable(
    ledger: Ledger, *, statuses: Collection[Status | str], older_than_s: float, now: float
) -> PruneCount:
    """How many rows `prune` with the same arguments would delete (a read)."""
    wanted = prunable_statuses(statuses)
    cutoff = _cutoff(older_than_s, now)
    by_status: dict[str, int] = {}
    oldest: float | None = None
    newest: float | None = None
    for status in wanted:
        [(count, low, high)] = await ledger.select(
            Sql(
                lambda d: (
                    "SELECT COUNT(*), MIN(state_since), MAX(state_since) FROM jobs"
                    f" WHERE status = {d.p} AND state_since < {d.p}"
                )
            ),
            [status.value, cutoff],
        )
        if not count:
            continue
        by_status[status.value] = int(count)
        oldest = low if oldest is None else min(oldest, low)
        newest = high if newest is None else max(newest, high)
    return PruneCount(cutoff, by_status, oldest, newest)


async def prune(
    ledger: Ledger,
    *,
    statuses: Collection[Status | str],
    older_than_s: float,
    now: float,
    archive: Path | None = None,
    batch: int = DEFAULT_BATCH,
    on_progress: Callable[[PruneReport], None] | None = None,
) -> PruneReport:
    """Delete the terminal rows in `statuses` whose state_since is before
    `now - older_than_s`, `batch` per transaction, with their events and
    results (see the module's text); with `archive`, each batch is appended
    to that JSON Lines file and fsync'd before its delete commits.
    `on_progress` is called with the report after each committed batch."""
    wanted = prunable_statuses(statuses)
    if batch < 1:
        raise ConfigError("prune: the batch size must be at least 1")
    if archive is not None:
        _check_archive("prune", archive, ledger)
    report = PruneReport(_cutoff(older_than_s, now), archive=archive)
    for status in wanted:
        while True:
            rows = await _prune_batch(ledger, status, report, now, batch)
            if not rows:
                break
            report.batches += 1
            report._count(rows)
            if on_progress is not None:
                on_progress(report)
            if len(rows) < batch:
                break
            # SQLite's busy handler polls: a writer waiting on this ledger
            # (a tick, the inbox) would rarely win the lock between two
            # batches run back to back. A pause lets it in, so others wait
            # for at most about one batch.
            await asyncio.sleep(BATCH_PAUSE)
    return report


def _check_archive(command: str, archive: Path, ledger: Ledger) -> None:
    """ConfigError, before a row is read or deleted, for an archive in a
    missing folder or one that is the ledger or a file beside it."""
    if not archive.parent.is_dir():
        raise ConfigError(f"{command}: the archive's folder {archive.parent} does not exist")
    refuse_ledger_file(f"{command}: the archive", archive, ledger.path)


async def _prune_batch(
    ledger: Ledger, status: Status, report: PruneReport, now: float, batch: int
) -> list[Row]:
    """One transaction: read the oldest `batch` rows, archive them, delete them."""
    async with ledger.write() as db:
        lock = getattr(db, "row_lock", "")  # PostgreSQL: FOR UPDATE
        async with db.execute(
            Sql(
                lambda d: (
                    f"SELECT id, {COLUMNS} FROM jobs WHERE status = {d.p} AND state_since < {d.p}"
                    f" ORDER BY state_since, {d.tie} LIMIT {d.p}{lock}"
                )
            ),
            (status.value, report.cutoff, batch),
        ) as cur:
            found = list(await cur.fetchall())
        if not found:
            return []
        rows = [row_from_tuple(r[1:]) for r in found]
        await _archive_and_delete(db, found, rows, report, now)
        if isinstance(ledger, LedgerBase):  # the deleted rows leave the text index
            ledger.queued_for_search(len(rows))
    return rows


async def _archive_and_delete(
    db: Any, found: Sequence[Any], rows: Sequence[Row], report: PruneReport, now: float
) -> None:
    """Archive `rows` (fsync'd) when the report has an archive, then delete
    them with their events and results, in the caller's transaction."""
    ids = json.dumps([int(r[0]) for r in found])
    keys = json.dumps([row.idem for row in rows])
    if report.archive is not None:
        lines = await archive_lines(db, ids, rows, now)
        try:
            await asyncio.to_thread(append_synced, report.archive, lines)
        except OSError as exc:
            raise ConfigError(
                f"prune: cannot write the archive {report.archive} ({exc}); the rows it"
                " would have held were not deleted"
            ) from exc
        report.archived += len(lines)
        # A kill here: archived, not deleted; the next prune archives again.
        crashpoint("after_archive_before_delete")
    by_id = Sql(lambda d: f"IN (SELECT CAST(value AS INTEGER) FROM {d.each()})")
    await db.execute("DELETE FROM events WHERE job " + by_id, (ids,))
    await db.execute("DELETE FROM results WHERE job " + by_id, (ids,))
    await db.execute(
        Sql(lambda d: f"UPDATE inbox SET job = NULL WHERE job IN (SELECT value FROM {d.each()})"),
        (keys,),
    )
    await db.execute("DELETE FROM jobs WHERE id " + by_id, (ids,))


async def discard(ledger: Ledger, idem: str, *, now: float, archive: Path) -> Row:
    """Delete one finished row (consumed, failed, cancelled) with its events
    and result, its archive line appended and fsync'd first, as `prune`
    does; OperatorError when it is not finished (or its cancel is still
    unconfirmed: deleting it would stop the remote cancel's retries)."""
    _check_archive("discard", archive, ledger)
    async with ledger.write() as db:
        lock = getattr(db, "row_lock", "")  # PostgreSQL: FOR UPDATE
        async with db.execute(
            Sql(lambda d: f"SELECT id, {COLUMNS} FROM jobs WHERE idem = {d.p}{lock}"), (idem,)
        ) as cur:
            found = list(await cur.fetchall())
        if not found:
            raise OperatorError(f"no job with key {idem}")
        row = row_from_tuple(found[0][1:])
        if row.status not in PRUNABLE:
            raise OperatorError(
                f"{idem} is {row.status}; discard applies to consumed, failed and cancelled rows"
            )
        if is_pending(row):
            raise OperatorError(
                f"{idem}: its cancel is still pending at the API; discard it once confirmed"
            )
        report = PruneReport(now, archive=archive)
        await _archive_and_delete(db, found, [row], report, now)
    return row
