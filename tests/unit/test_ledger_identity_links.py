"""A SQLite ledger reached through a symbolic link (core/ledger/identity.py).

SQLite follows the link to keep its `-wal` beside the real file, and a
process that opened the ledger by its real path left its marker there. The
protections against starting a new ledger over one that was (a truncated
file with its marker or its WAL beside it, a deleted one named by its marker)
must hold whichever path each process uses: before, a process reaching a
truncated ledger through a link for the first time looked only beside the
link, found nothing, and started a new ledger in its place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.identity import LedgerReplacedError
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import LedgerError

SPEC = JobSpec(input="a job", model="m").to_json()


async def _made(db: Path) -> None:
    """A ledger with one job at `db`, closed (its WAL checkpointed away)."""
    ledger = await open_ledger(db, clock=ManualClock(1_800_000_000.0))
    await ledger.insert_jobs([("k1", SPEC, "m")], "test")
    await ledger.close()


def _truncate(db: Path) -> None:
    """The file emptied while nothing has it open: only the marker tells."""
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    db.write_bytes(b"")


def _paths(tmp_path: Path) -> tuple[Path, Path]:
    real = tmp_path / "store" / "ledger.db"
    real.parent.mkdir()
    link = tmp_path / "current.db"
    link.symlink_to(real)
    return real, link


@pytest.mark.parametrize("made_by", ["the real path", "the link"])
async def test_a_truncated_ledger_is_refused_by_whichever_path_did_not_make_it(
    tmp_path: Path, made_by: str
) -> None:
    real, link = _paths(tmp_path)
    await _made(real if made_by == "the real path" else link)
    _truncate(real)
    other = link if made_by == "the real path" else real
    with pytest.raises(LedgerReplacedError, match="ledger-id"):
        await open_ledger(other, clock=ManualClock(1_800_000_000.0))
    assert real.stat().st_size == 0  # nothing written over it


async def test_an_empty_ledger_with_its_wal_beside_the_real_file_is_refused_through_a_link(
    tmp_path: Path,
) -> None:
    real, link = _paths(tmp_path)
    real.write_bytes(b"")  # no marker (an old version made it), but its WAL
    Path(f"{real}-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\x00" * 28)
    with pytest.raises(LedgerReplacedError, match="WAL"):
        await open_ledger(link, clock=ManualClock(1_800_000_000.0))
    assert real.stat().st_size == 0


async def test_a_deleted_ledger_is_named_by_its_marker_through_a_dangling_link(
    tmp_path: Path,
) -> None:
    real, link = _paths(tmp_path)
    await _made(real)
    for side in ("", "-wal", "-shm"):
        Path(f"{real}{side}").unlink(missing_ok=True)
    with pytest.raises(LedgerError, match="ledger-id"):
        await open_ledger(link, clock=ManualClock(1_800_000_000.0), create=False)


async def test_a_ledger_opened_through_a_link_keeps_one_marker_beside_each(
    tmp_path: Path,
) -> None:
    real, link = _paths(tmp_path)
    await _made(link)
    with sqlite3.connect(real) as check:
        (ledger_id,) = check.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
    for marker in (Path(f"{link}.ledger-id"), Path(f"{real}.ledger-id")):
        assert marker.read_text(encoding="utf-8").strip() == ledger_id
    # A plain path (no link) keeps its one marker.
    plain = tmp_path / "plain.db"
    await _made(plain)
    assert sorted(p.name for p in tmp_path.glob("*.ledger-id")) == [
        "current.db.ledger-id",
        "plain.db.ledger-id",
    ]
