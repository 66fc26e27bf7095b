"""A file a command writes for the user is never the ledger or a file beside it.

`export -o l.db --db l.db` renamed the export over the SQLite ledger (exit 0:
the ledger gone), and `prune --archive l.db.ledger-id` appended the pruned
rows to the ledger's marker, which the next writable open rewrites to the id
alone: the rows were in neither the ledger nor an archive. The check
(core/ledger/identity.py's `refuse_ledger_file`) compares files, not names;
prune and discard make it before a row is read (the console's `:prune` and
`x` go through them)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger import identity
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.port import Ledger
from reclaim_tui.core.ledger.prune import discard, prune
from reclaim_tui.core.models import Status
from reclaim_tui.errors import ConfigError
from tests.unit.test_prune import NOW, keys, seed


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a ledger file `l.db`, the working directory."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "l.db").write_bytes(b"SQLite format 3\x00")
    return tmp_path


@pytest.mark.parametrize("spelling", ["l.db", "./l.db", "sub/../l.db", "ABSOLUTE"])
def test_the_ledger_however_spelled_is_refused(folder: Path, spelling: str) -> None:
    (folder / "sub").mkdir()
    target = str(folder / "l.db") if spelling == "ABSOLUTE" else spelling
    with pytest.raises(ConfigError, match=r"--output .*: that is the ledger l\.db itself"):
        identity.refuse_ledger_file("--output", target, "l.db")


#: The files beside a ledger, with what the refusal calls each.
SIDE = {
    "-wal": "write-ahead log",
    "-shm": "WAL index",
    "-journal": "rollback journal",
    "-turn": "write-turn lock file",
    ".ledger-id": "ledger-id marker",
}


@pytest.mark.parametrize("suffix", sorted(SIDE))
@pytest.mark.parametrize("exists", [True, False], ids=["there", "not-yet"])
def test_each_side_file_is_refused_there_or_not(folder: Path, suffix: str, exists: bool) -> None:
    if exists:
        (folder / f"l.db{suffix}").write_bytes(b"x")
    with pytest.raises(ConfigError, match=f"that is l\\.db{suffix}, the {SIDE[suffix]}"):
        identity.refuse_ledger_file("--archive", f"./l.db{suffix}", "l.db")


def test_links_to_the_ledger_and_its_side_files_are_refused(folder: Path) -> None:
    os.symlink("l.db", "soft")
    os.link("l.db", "hard")
    (folder / "l.db.ledger-id").write_text("abc\n")
    os.link("l.db.ledger-id", "hard-marker")
    os.symlink("l.db-journal", "dangling")  # the journal is not there (yet)
    for target in ("soft", "hard", "hard-marker", "dangling"):
        with pytest.raises(ConfigError, match=r"of the ledger l\.db|the ledger l\.db itself"):
            identity.refuse_ledger_file("--output", target, "l.db")


def test_a_ledger_reached_through_a_link_is_guarded_at_both_names(folder: Path) -> None:
    (folder / "real").mkdir()
    os.replace("l.db", "real/r.db")
    os.symlink("real/r.db", "l.db")
    for target in ("real/r.db", "real/r.db-wal", "real/r.db.ledger-id", "l.db.ledger-id"):
        with pytest.raises(ConfigError, match=r"the ledger l\.db"):
            identity.refuse_ledger_file("--output", target, "l.db")


def test_other_files_and_server_ledgers_pass(folder: Path) -> None:
    (folder / "export.jsonl").write_text("")
    for target in ("export.jsonl", "l.db.bak", "l.db-wal.jsonl", "new.jsonl"):
        identity.refuse_ledger_file("--output", target, "l.db")
    identity.refuse_ledger_file("--output", "l.db", "postgresql://u@h/db")
    identity.refuse_ledger_file("--output", "l.db", "host=h dbname=db")


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    led = await open_ledger(str(tmp_path / "l.db"), clock=ManualClock(NOW))
    await seed(led, [("old-a", Status.CONSUMED, 40), ("old-b", Status.CANCELLED, 40)])
    yield led
    await led.close()


async def test_prune_refuses_an_archive_on_the_marker_before_a_delete(
    ledger: Ledger, tmp_path: Path
) -> None:
    marker = tmp_path / "l.db.ledger-id"
    before = marker.read_bytes()
    with pytest.raises(ConfigError, match=r"prune: the archive .*ledger-id marker"):
        await prune(ledger, statuses=["consumed"], older_than_s=0, now=NOW, archive=marker)
    assert marker.read_bytes() == before
    assert await keys(ledger) == {"old-a", "old-b"}


async def test_discard_refuses_an_archive_linked_to_the_ledger(
    ledger: Ledger, tmp_path: Path
) -> None:
    link = tmp_path / "pruned.jsonl"
    link.symlink_to(tmp_path / "l.db")
    size = (tmp_path / "l.db").stat().st_size
    with pytest.raises(ConfigError, match=r"discard: the archive .*the ledger .* itself"):
        await discard(ledger, "old-b", now=NOW, archive=link)
    assert (tmp_path / "l.db").stat().st_size == size
    assert await keys(ledger) == {"old-a", "old-b"}
