"""The marker beside a SQLite ledger (`<ledger>.ledger-id`, core/ledger/identity.py)
in a folder others may write to, or where its name is taken by something
that is not a marker.

Its temporary file had a guessable name (`<marker>.<pid>.tmp`) and was
written through whatever stood there: a symbolic link planted for the next
process ids made a writer's open write the ledger id into a file the
planter chose. A FIFO at the marker's name blocked every writer for ever, a
folder there ended the open with a traceback, and a ledger name too long for
`<marker>.<pid>.tmp` (though not for the marker) went without a marker."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reclaim_tui.core.clock import ManualClock
from reclaim_tui.core.ledger.identity import LedgerReplacedError
from reclaim_tui.core.ledger.opening import open_ledger

NOW = 1_800_000_000.0


async def _open_close(db: Path) -> str | None:
    ledger = await open_ledger(db, clock=ManualClock(NOW))
    ledger_id = ledger.ledger_id
    await ledger.close()
    return ledger_id


def _says(marker: Path) -> str:
    assert marker.is_file() and not marker.is_symlink()
    return marker.read_text(encoding="utf-8").strip()


async def test_symbolic_links_planted_at_temporary_names_are_never_written_through(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    db = tmp_path / "l.db"
    me = os.getpid()
    for pid in range(max(1, me - 50), me + 50):  # the old name of every nearby process
        (tmp_path / f"l.db.ledger-id.{pid}.tmp").symlink_to(victim)
    ledger_id = await _open_close(db)
    assert victim.read_text() == "precious\n"
    assert ledger_id is not None and _says(tmp_path / "l.db.ledger-id") == ledger_id


async def test_a_symbolic_link_at_the_markers_name_is_replaced_not_followed(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "l.db.ledger-id").symlink_to(victim)
    ledger_id = await _open_close(tmp_path / "l.db")
    assert victim.read_text() == "precious\n"
    assert ledger_id is not None and _says(tmp_path / "l.db.ledger-id") == ledger_id


_OPEN_BESIDE_A_FIFO = textwrap.dedent(
    """
    import asyncio, sys
    from reclaim_tui.core.clock import ManualClock
    from reclaim_tui.core.ledger.opening import open_ledger

    async def main():
        ledger = await open_ledger(sys.argv[1], clock=ManualClock(1.8e9))
        await ledger.close()
        print("opened", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("ledger", ["new", "existing"])
def test_a_fifo_at_the_markers_name_does_not_hold_a_writer(tmp_path: Path, ledger: str) -> None:
    db = tmp_path / "l.db"
    if ledger == "existing":
        asyncio.run(_open_close(db))
        (tmp_path / "l.db.ledger-id").unlink()
    os.mkfifo(tmp_path / "l.db.ledger-id")
    # In a process of its own: a read of the FIFO would block it, not the suite
    # (the bound is a hang's, far above any open's time).
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_BESIDE_A_FIFO, str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "opened"


async def test_a_folder_at_the_markers_name_leaves_the_ledger_usable(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    (tmp_path / "l.db.ledger-id").mkdir()
    assert await _open_close(db) is not None  # no marker can be written there; the ledger works
    assert (tmp_path / "l.db.ledger-id").is_dir()


async def test_a_long_ledger_name_still_gets_its_marker(tmp_path: Path) -> None:
    db = tmp_path / ("l" * 236 + ".db")  # the marker's name is 250 bytes, within 255
    ledger_id = await _open_close(db)
    assert ledger_id is not None and _says(Path(f"{db}.ledger-id")) == ledger_id
    db.write_bytes(b"")  # truncated: the marker refuses a new ledger there
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with pytest.raises(LedgerReplacedError, match="ledger-id"):
        await open_ledger(db, clock=ManualClock(NOW))


async def test_a_marker_this_user_may_not_read_still_refuses_a_new_ledger(
    tmp_path: Path,
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    db = tmp_path / "l.db"
    await _open_close(db)
    (tmp_path / "l.db.ledger-id").chmod(0)
    db.write_bytes(b"")
    for side in ("-wal", "-shm"):
        Path(f"{db}{side}").unlink(missing_ok=True)
    with pytest.raises(LedgerReplacedError, match="ledger-id"):
        await open_ledger(db, clock=ManualClock(NOW))
