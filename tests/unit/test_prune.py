"""Retention (core/ledger/prune.py) on both engines: what is deleted, what goes with
it, the archive written before the delete commits, batches, a kill between
the two, and what the console's reads see afterwards."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger import prune as prune_module
from reclaim_tui.core.ledger.console.queries import ConsoleReader
from reclaim_tui.core.ledger.console.views import RowFilter, View
from reclaim_tui.core.ledger.dialect import Sql
from reclaim_tui.core.ledger.inbox import InboxEvent, named, record
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.prune import PruneReport, count_prunable, prune
from reclaim_tui.core.ledger.schema import EVENT_SQL
from reclaim_tui.core.ledger.sqlite.schema import SEARCH_FLUSH_SQL
from reclaim_tui.core.models import JobSpec, Status, attempt_tag
from reclaim_tui.errors import ConfigError
from tests.helpers.pages import walk

NOW = 1_800_000_000.0
DAY = 86_400.0


def spec(key: str) -> str:
    return JobSpec(input=f"needle prompt of {key}", model="m").to_json()


async def seed(ledger: Ledger, rows: list[tuple[str, Status, float]]) -> None:
    """Rows (key, status, days in that status), each with a handle, two
    events, and a stored result where the status has one."""
    await ledger.insert_jobs([(key, spec(key), "m") for key, _, _ in rows], "test")
    async with ledger.write() as db:
        await db.executemany(
            Sql(
                lambda d: (
                    f"UPDATE jobs SET status = {d.p}, state_since = {d.p}, updated_at = {d.p},"
                    f" handle = {d.p}"
                    f" WHERE idem = {d.p}"
                )
            ),
            [(s.value, NOW - d * DAY, NOW - d * DAY, f"int-{k}", k) for k, s, d in rows],
        )
        await db.executemany(
            EVENT_SQL,
            [
                (NOW - d * DAY, k, "test", "reserving", s.value, f"to {s.value}", k)
                for k, s, d in rows
            ],
        )
        with_result = [(k, d) for k, s, d in rows if s in (Status.DONE, Status.CONSUMED)]
        await db.executemany(
            Sql(
                lambda d: (
                    "INSERT INTO results(job, idem, interaction_id, output_text, usage, raw_json,"
                    f" stored_at) SELECT id, idem, {d.p}, {d.p}, {d.p}, {d.p}, {d.p} FROM jobs"
                    f" WHERE idem = {d.p}"
                )
            ),
            [
                (
                    f"int-{k}",
                    f"text of {k}",
                    json.dumps({"total_tokens": 7}),
                    json.dumps({"id": f"int-{k}", "status": "completed"}),
                    NOW - d * DAY,
                    k,
                )
                for k, d in with_result
            ],
        )


MIXED: list[tuple[str, Status, float]] = [
    ("old-consumed-1", Status.CONSUMED, 40),
    ("old-consumed-2", Status.CONSUMED, 31),
    ("new-consumed", Status.CONSUMED, 29),
    ("old-failed", Status.FAILED, 50),
    ("old-cancelled", Status.CANCELLED, 45),
    ("old-done", Status.DONE, 60),
    ("old-submitted", Status.SUBMITTED, 60),
    ("old-reserving", Status.RESERVING, 60),
]


@pytest.fixture
async def mixed(db_url: str, clock: ManualClock) -> AsyncIterator[Ledger]:
    led = await open_ledger(db_url, clock=ManualClock(NOW))
    await seed(led, MIXED)
    yield led
    await led.close()


async def keys(ledger: Ledger, table: str = "jobs") -> set[str]:
    return {r[0] for r in await ledger.select(f"SELECT idem FROM {table}")}


def read_archive(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_only_terminal_rows_past_the_age_go_with_their_events_and_results(
    mixed: Ledger,
) -> None:
    found = await count_prunable(mixed, statuses=["consumed"], older_than_s=30 * DAY, now=NOW)
    assert (found.count, found.by_status) == (2, {"consumed": 2})
    assert (found.oldest, found.newest) == (NOW - 40 * DAY, NOW - 31 * DAY)

    report = await prune(mixed, statuses=["consumed"], older_than_s=30 * DAY, now=NOW)
    assert (report.pruned, report.by_status, report.batches) == (2, {"consumed": 2}, 1)
    gone = {"old-consumed-1", "old-consumed-2"}
    everything = {k for k, _, _ in MIXED}
    assert await keys(mixed) == everything - gone
    assert await keys(mixed, "events") == everything - gone
    assert await keys(mixed, "results") == {"new-consumed", "old-done"}
    for key in gone:
        assert await mixed.get(key) is None and await mixed.events(key) == []

    again = await count_prunable(mixed, statuses=["consumed"], older_than_s=30 * DAY, now=NOW)
    assert again.count == 0


async def test_failed_and_cancelled_only_when_asked(mixed: Ledger) -> None:
    report = await prune(
        mixed, statuses=["failed", "cancelled", "consumed"], older_than_s=30 * DAY, now=NOW
    )
    assert report.by_status == {"consumed": 2, "failed": 1, "cancelled": 1}
    assert await keys(mixed) == {"new-consumed", "old-done", "old-submitted", "old-reserving"}


@pytest.mark.parametrize("status", ["reserving", "submitted", "done"])
async def test_unfinished_statuses_are_refused_and_nothing_is_deleted(
    mixed: Ledger, status: str
) -> None:
    for call in (count_prunable, prune):
        with pytest.raises(ConfigError, match=f"not {status}"):
            await call(mixed, statuses=["consumed", status], older_than_s=0, now=NOW)
    with pytest.raises(ConfigError):
        await prune(mixed, statuses=[], older_than_s=0, now=NOW)
    assert await keys(mixed) == {k for k, _, _ in MIXED}


async def test_the_archive_holds_exactly_what_was_deleted(mixed: Ledger, tmp_path: Path) -> None:
    wanted = ["consumed", "failed"]
    doomed = {
        k: (await mixed.get(k), await mixed.events(k), await mixed.result(k))
        for k in ("old-consumed-1", "old-consumed-2", "old-failed")
    }
    archive = tmp_path / "archive.jsonl"
    report = await prune(
        mixed, statuses=wanted, older_than_s=30 * DAY, now=NOW, archive=archive, batch=2
    )
    assert report.pruned == report.archived == 3 and report.batches == 2
    lines = read_archive(archive)
    assert sorted(line["idem"] for line in lines) == sorted(doomed)
    for line in lines:
        row, events, result = doomed[line["idem"]]
        assert row is not None
        assert line["status"] == row.status.value and line["handle"] == row.handle
        assert line["spec"] == json.loads(row.spec)
        assert datetime.fromisoformat(line["state_since"]).timestamp() == row.state_since
        assert datetime.fromisoformat(line["pruned_at"]).timestamp() == NOW
        assert [e["note"] for e in line["events"]] == [e.note for e in events]
        assert [datetime.fromisoformat(e["at"]).timestamp() for e in line["events"]] == [
            e.at for e in events
        ]
        if result is None:
            assert line["output_text"] is None and line["interaction"] is None
        else:
            assert line["output_text"] == result.output_text
            assert line["usage"] == result.usage and line["interaction"] == result.raw
    # Appended to, not replaced: a second prune adds its rows after these.
    await prune(mixed, statuses=["cancelled"], older_than_s=30 * DAY, now=NOW, archive=archive)
    assert [line["idem"] for line in read_archive(archive)][-1] == "old-cancelled"
    assert len(read_archive(archive)) == 4


@pytest.mark.parametrize(("rows", "batch", "batches"), [(25, 10, 3), (20, 10, 2), (9, 10, 1)])
async def test_batches_and_progress(
    db_url: str, rows: int, batch: int, batches: int, tmp_path: Path
) -> None:
    ledger = await open_ledger(db_url, clock=ManualClock(NOW))
    try:
        await seed(ledger, [(f"row-{n:03d}", Status.CONSUMED, 10 + n) for n in range(rows)])
        seen: list[int] = []
        report = await prune(
            ledger,
            statuses=["consumed"],
            older_than_s=DAY,
            now=NOW,
            batch=batch,
            archive=tmp_path / "a.jsonl",
            on_progress=lambda r: seen.append(r.pruned),
        )
        expected = [min(batch * (n + 1), rows) for n in range(batches)]
        assert seen == expected and report.batches == batches and report.pruned == rows
        assert await keys(ledger) == set() and len(read_archive(tmp_path / "a.jsonl")) == rows
        # Oldest first: the first batch is the oldest rows.
        first = [line["idem"] for line in read_archive(tmp_path / "a.jsonl")][:batch]
        assert first == [f"row-{n:03d}" for n in range(rows - 1, rows - 1 - batch, -1)][:rows]
    finally:
        await ledger.close()


class Killed(BaseException):
    """The process dies here: nothing after this line runs."""


def kill_at(nth: int) -> Callable[[str], None]:
    hits = {"n": 0}

    def crashpoint(name: str) -> None:
        if name == "after_archive_before_delete":
            hits["n"] += 1
            if hits["n"] == nth:
                raise Killed(name)

    return crashpoint


async def test_a_kill_between_the_archive_and_the_delete_loses_nothing(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = await open_ledger(db_url, clock=ManualClock(NOW))
    all_keys = {f"row-{n:03d}" for n in range(25)}
    try:
        await seed(ledger, [(k, Status.CONSUMED, 40) for k in sorted(all_keys)])
        archive = tmp_path / "archive.jsonl"
        monkeypatch.setattr(prune_module, "crashpoint", kill_at(2))
        with pytest.raises(Killed):
            await prune(
                ledger, statuses=["consumed"], older_than_s=DAY, now=NOW, archive=archive, batch=10
            )
        # Batch 1 committed; batch 2 archived, its delete rolled back.
        assert len(await keys(ledger)) == 15 and len(read_archive(archive)) == 20
        kept = await keys(ledger)
        assert await keys(ledger, "events") == kept and len(await keys(ledger, "results")) == 15

        monkeypatch.setattr(prune_module, "crashpoint", lambda name: None)
        report = await prune(
            ledger,
            statuses=["consumed"],
            older_than_s=DAY,
            now=NOW + 60,
            archive=archive,
            batch=10,
        )
    finally:
        await ledger.close()
    assert report.pruned == 15
    lines = read_archive(archive)
    assert {line["idem"] for line in lines} == all_keys and len(lines) == 35
    # The copies: the same key and updated_at as an earlier line, the same
    # content but for when they were pruned.
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    copies = 0
    for line in lines:
        version = (line["idem"], line["updated_at"])
        if version in seen:
            copies += 1
            first = seen[version]
            assert {**first, "pruned_at": None} == {**line, "pruned_at": None}
            assert first["pruned_at"] != line["pruned_at"]
        seen[version] = line
    assert copies == 10


async def test_inbox_rows_stay_but_no_longer_name_a_pruned_job(mixed: Ledger) -> None:
    sent = NOW - 40 * DAY
    async with mixed.write() as db:
        await db.execute(Sql(lambda d: f"UPDATE jobs SET attempts = 1, sent_at = {d.p}"), (sent,))
    for n, key in enumerate(("old-consumed-1", "new-consumed")):
        event = InboxEvent(f"wh-{n}", NOW - DAY, "interaction.completed", f"int-{key}", key,
                           "completed", "hmac", attempt_tag(1, sent))  # fmt: skip
        assert await record(mixed, event)
    await prune(mixed, statuses=["consumed"], older_than_s=30 * DAY, now=NOW)
    assert sorted(await mixed.select("SELECT webhook_id, job FROM inbox ORDER BY webhook_id")) == [
        ("wh-0", None),
        ("wh-1", "new-consumed"),
    ]
    assert await named(mixed, "old-consumed-1") == []
    # The event is still known: a redelivery changes nothing.
    again = InboxEvent("wh-0", NOW, "interaction.completed", "int-old-consumed-1",
                       "old-consumed-1", "completed", "hmac")  # fmt: skip
    assert not await record(mixed, again)
    # The key is free again: a job file passed again reserves it anew.
    inserted, _ = await mixed.insert_jobs([("old-consumed-1", spec("x"), "m")], "test")
    assert inserted == ["old-consumed-1"] and await named(mixed, "old-consumed-1") == []
    # Its event arriving late (issue 22) names an attempt the new job never sent.
    late = InboxEvent("wh-late", NOW, "interaction.completed", "int-old-consumed-1",
                      "old-consumed-1", "completed", "hmac", attempt_tag(1, sent))  # fmt: skip
    assert await record(mixed, late)
    assert await named(mixed, "old-consumed-1") == []


async def test_the_console_reads_agree_after_a_prune(db_url: str, mixed: Ledger) -> None:
    await prune(mixed, statuses=["consumed", "failed"], older_than_s=30 * DAY, now=NOW)
    if not db_url.startswith("postgresql"):
        with closing(sqlite3.connect(db_url, isolation_level=None)) as con:
            con.executescript(SEARCH_FLUSH_SQL)  # the deletes move out of the index too
            con.execute("INSERT INTO jobs_fts(jobs_fts) VALUES ('integrity-check')")
            con.execute("INSERT INTO handles_fts(handles_fts) VALUES ('integrity-check')")
    reader = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
    try:
        counts, orphans = await reader.counts()
        assert counts == {
            "consumed": 1,
            "cancelled": 1,
            "done": 1,
            "submitted": 1,
            "reserving": 1,
        }
        assert orphans == 0
        remaining = await keys(mixed)
        for text in ("needle", "old-consumed", "int-old", "prompt of old-failed"):
            view = View(filter=RowFilter.parse(text))
            found = set(await walk(reader, view, 3))
            assert found == {k for k in remaining if text in f"{k} int-{k} needle prompt of {k}"}
        consumed = View(statuses=frozenset({Status.CONSUMED}))
        assert await walk(reader, consumed, 2) == ["new-consumed"]
        assert await reader.detail("old-consumed-1") is None
    finally:
        await reader.close()


async def test_a_dry_count_writes_nothing(db_url: str, mixed: Ledger) -> None:
    before = await mixed.select("SELECT idem, status, updated_at FROM jobs ORDER BY idem")
    readonly = await open_ledger(db_url, clock=ManualClock(NOW), readonly=True, create=False)
    try:
        found = await count_prunable(
            readonly, statuses=["consumed", "failed", "cancelled"], older_than_s=0, now=NOW
        )
    finally:
        await readonly.close()
    assert found.by_status == {"consumed": 3, "failed": 1, "cancelled": 1}
    assert await mixed.select("SELECT idem, status, updated_at FROM jobs ORDER BY idem") == before


def test_report_json_has_iso_times() -> None:
    report = PruneReport(cutoff=NOW, by_status={"consumed": 2}, oldest=NOW - DAY, newest=NOW)
    data = report.as_json()
    assert data["pruned"] == 2 and data["archive"] is None
    for name, at in (("cutoff", NOW), ("oldest", NOW - DAY), ("newest", NOW)):
        assert data[name].endswith("Z")
        assert datetime.fromisoformat(data[name]).timestamp() == at


@pytest.mark.parametrize("torn", ['{"idem": "row-00', '{"idem": "whole"}'])
async def test_a_line_cut_short_by_a_kill_does_not_glue_to_the_next(
    tmp_path: Path, torn: str
) -> None:
    """A kill in the middle of the archive's write leaves a last line without
    its newline (its batch was not deleted): the next prune cuts it off, or
    ends it when it is whole, before appending."""
    ledger = await open_ledger(str(tmp_path / "l.db"), clock=ManualClock(NOW))
    try:
        await seed(ledger, [("a-row", Status.CONSUMED, 40), ("b-row", Status.CONSUMED, 40)])
        archive = tmp_path / "archive.jsonl"
        archive.write_text('{"idem": "earlier"}\n' + torn, encoding="utf-8")
        await prune(ledger, statuses=["consumed"], older_than_s=DAY, now=NOW, archive=archive)
    finally:
        await ledger.close()
    idems = [line["idem"] for line in read_archive(archive)]
    kept = ["whole"] if torn.endswith("}") else []
    assert idems == ["earlier", *kept, "a-row", "b-row"]


async def test_ids_of_pruned_rows_taken_again_are_found_by_their_new_text(db_url: str) -> None:
    """SQLite numbers a new row past the largest id left: pruning the newest
    rows hands their ids to the next jobs. The text index must then hold the
    new rows' text, not the pruned ones'."""
    ledger = await open_ledger(db_url, clock=ManualClock(NOW))
    try:
        await seed(ledger, [(f"gone-{n}", Status.CONSUMED, 40) for n in range(3)])
        ids_before = {r[0] for r in await ledger.select("SELECT id FROM jobs")}
        await prune(ledger, statuses=["consumed"], older_than_s=DAY, now=NOW)
        await ledger.insert_jobs([(f"fresh-{n}", spec(f"fresh-{n}"), "m") for n in range(3)], "t")
        if not db_url.startswith("postgresql"):
            assert {r[0] for r in await ledger.select("SELECT id FROM jobs")} == ids_before
    finally:
        await ledger.close()
    for flushed in (False, True):
        if flushed and not db_url.startswith("postgresql"):
            with closing(sqlite3.connect(db_url, isolation_level=None)) as con:
                con.executescript(SEARCH_FLUSH_SQL)
                con.execute("INSERT INTO jobs_fts(jobs_fts) VALUES ('integrity-check')")
        reader = await ConsoleReader.open(db_url, clock=ManualClock(NOW))
        try:
            await reader.counts()
            assert await walk(reader, View(filter=RowFilter.parse("gone")), 5) == []
            found = await walk(reader, View(filter=RowFilter.parse("needle")), 5)
            assert sorted(found) == ["fresh-0", "fresh-1", "fresh-2"]
        finally:
            await reader.close()


async def test_an_archive_that_cannot_be_written_stops_the_prune_before_a_delete(
    mixed: Ledger, tmp_path: Path
) -> None:
    everything = await keys(mixed)
    with pytest.raises(ConfigError, match="does not exist"):
        await prune(mixed, statuses=["consumed"], older_than_s=0, now=NOW,
                    archive=tmp_path / "no-such-folder" / "a.jsonl")  # fmt: skip
    folder = tmp_path / "archive-is-a-folder"
    folder.mkdir()
    with pytest.raises(ConfigError, match="were not deleted"):
        await prune(mixed, statuses=["consumed"], older_than_s=0, now=NOW, archive=folder)
    assert await keys(mixed) == everything


async def test_a_file_that_is_not_an_archive_is_refused_untouched(
    ledger: Ledger, tmp_path: Path
) -> None:
    await seed(ledger, [("old-a", Status.CONSUMED, 40)])
    for content in (b"\x1f\x8b\x08binary gzip without a newline", b"notes\nlast line unfinished"):
        other = tmp_path / "not-an-archive"
        other.write_bytes(content)
        with pytest.raises(ConfigError, match="does not end like a prune archive"):
            await prune(
                ledger, statuses=["consumed"], older_than_s=30 * DAY, now=NOW, archive=other
            )
        assert other.read_bytes() == content
    assert (
        await count_prunable(ledger, statuses=["consumed"], older_than_s=30 * DAY, now=NOW)
    ).count == 1


async def test_batches_leave_room_for_other_writers(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(ledger, [(f"old-{n}", Status.CONSUMED, 40) for n in range(25)])
    pauses: list[float] = []
    real_sleep = prune_module.asyncio.sleep

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(prune_module.asyncio, "sleep", sleep)
    report = await prune(ledger, statuses=["consumed"], older_than_s=30 * DAY, now=NOW, batch=10)
    assert report.pruned == 25 and report.batches == 3
    assert pauses == [prune_module.BATCH_PAUSE] * 2, "a pause between full batches"


@pytest.mark.parametrize("text", ["1000000w", "99999999999d", "101y", "-5d", ""])
def test_ages_past_a_century_or_malformed_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        prune_module.parse_age(text)


async def test_a_usage_edited_into_garbage_is_archived_not_a_crash(
    ledger: Ledger, tmp_path: Path
) -> None:
    await seed(ledger, [("old-a", Status.CONSUMED, 40), ("old-b", Status.CONSUMED, 40)])
    async with ledger.write() as db:
        await db.execute(
            "UPDATE results SET usage = 'not json'"
            " WHERE job = (SELECT id FROM jobs WHERE idem = 'old-a')"
        )
    archive = tmp_path / "a.jsonl"
    report = await prune(
        ledger, statuses=["consumed"], older_than_s=30 * DAY, now=NOW, archive=archive
    )
    assert report.pruned == 2
    lines = {
        json.loads(line)["idem"]: json.loads(line) for line in archive.read_text().splitlines()
    }
    assert lines["old-a"]["usage"] == {"unreadable": "not json"}
