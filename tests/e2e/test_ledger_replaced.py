"""Issue 22 point 6: a ledger file replaced under a running service.

Truncated to 0 bytes, moved over by an older copy (`mv`), overwritten by an
older copy (`cp`): the service stops at its next pass (exit 4, a
`ledger_replaced` line saying what changed) instead of writing on, and a
tick refuses to start a new ledger in a truncated file (its marker and its
WAL say one was there) instead of sending every job again. Migration 6 gives
a ledger the old code made its id.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.ledger.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, migration_statements
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs


def marker_path(db: str | Path) -> Path:
    """The marker beside a ledger (core/ledger/identity.py's `marker_path`; spelled
    out so that this module imports on the code before the fix)."""
    return Path(f"{db}.ledger-id")


def _lines(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _until(predicate, limit: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _ledger_with_jobs(ws: Workspace, name: str, count: int) -> Path:
    """`count` jobs ticked to consumed; the ledger closed (checkpointed)."""
    jobs = write_jobs(ws.root / f"{name}.jsonl", [{"input": f"{name} {i}"} for i in range(count)])
    for n in range(10):
        done = ws.tick("--first-poll", "0", jobs=jobs if n == 0 else None)
        assert done.returncode == 0, done.stdout + done.stderr
        if (
            ws.view().status_counts().get("reserving", 0)
            + ws.view().status_counts().get("submitted", 0)
            == 0
        ):
            break
    return jobs


def _serve(ws: Workspace, emu: EmulatorProcess, log: Path) -> subprocess.Popen[bytes]:
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
    args += ["--base-url", emu.base_url, "--api-key", emu.api_key, "--idle-sleep", "0.1"]
    proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
    # The first pass took the file's snapshot (a pass line is said at the first pass).
    assert _until(lambda: any(line["event"] == "pass" for line in _lines(log)))
    return proc


def _stopped_on(proc: subprocess.Popen[bytes], log: Path) -> str:
    code = proc.wait(60)
    replaced = [line for line in _lines(log) if line["event"] == "ledger_replaced"]
    assert code == 4, _lines(log)[-3:]
    assert len(replaced) == 1, _lines(log)[-3:]
    return str(replaced[0]["change"])


def test_truncated_under_run_stops_it_and_a_tick_refuses_to_start_over(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "trunc", emulator=emulator)
    jobs = _ledger_with_jobs(ws, "a", 4)
    log = ws.root / "run.log"
    proc = _serve(ws, emulator, log)
    try:
        Path(ws.db).write_bytes(b"")  # `: > ledger.db`
        assert "truncated" in _stopped_on(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    creates = emulator.stats()["calls"]["create"]
    again = ws.tick("--first-poll", "0", jobs=jobs)
    assert again.returncode == 4, again.stdout + again.stderr
    assert "refusing to start a new ledger" in again.stderr
    assert emulator.stats()["calls"]["create"] == creates  # nothing sent again
    assert Path(ws.db).stat().st_size == 0  # and nothing written over it


def test_a_truncated_ledger_with_its_marker_is_refused_by_tick(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "marker", emulator=emulator)
    jobs = _ledger_with_jobs(ws, "m", 3)
    assert marker_path(ws.db).exists()
    con = sqlite3.connect(ws.db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    for side in ("-wal", "-shm"):  # a ledger nothing has open: only the marker tells
        Path(f"{ws.db}{side}").unlink(missing_ok=True)
    Path(ws.db).write_bytes(b"")
    creates = emulator.stats()["calls"]["create"]
    again = ws.tick("--first-poll", "0", jobs=jobs)
    assert again.returncode == 4, again.stdout + again.stderr
    assert str(marker_path(ws.db)) in again.stderr
    assert emulator.stats()["calls"]["create"] == creates


def test_a_deleted_ledger_with_its_marker_is_named_by_the_read_commands(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    # The ledger removed, its marker left: tick refuses (naming the marker);
    # status said "no ledger here (run `tick` or `submit` first)", sending
    # the operator to the command that refuses, and never said a ledger was.
    ws = Workspace(tmp_path / "gone", emulator=emulator)
    _ledger_with_jobs(ws, "g", 2)
    for side in ("", "-wal", "-shm"):
        Path(f"{ws.db}{side}").unlink(missing_ok=True)
    assert marker_path(ws.db).exists()
    for command in ("status", "export"):
        out = ws.cli(command, engine=False)
        assert out.returncode == 4, out.stdout + out.stderr
        assert str(marker_path(ws.db)) in out.stderr, out.stderr
        assert "run `tick`" not in out.stderr, out.stderr


def test_an_empty_ledger_with_a_wal_beside_it_is_refused(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "wal", emulator=emulator)
    Path(ws.db).write_bytes(b"")  # no marker (an old version made it), but its WAL
    Path(f"{ws.db}-wal").write_bytes(b"\x37\x7f\x06\x82" + b"\x00" * 28)
    jobs = write_jobs(ws.root / "w.jsonl", [{"input": "w"}])
    done = ws.tick(jobs=jobs)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "WAL" in done.stderr
    assert Path(ws.db).stat().st_size == 0


def test_mv_of_an_older_copy_under_run_stops_it(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws = Workspace(tmp_path / "mv", emulator=emulator)
    _ledger_with_jobs(ws, "a", 3)
    old = ws.root / "old.db"
    shutil.copyfile(ws.db, old)
    _ledger_with_jobs(ws, "b", 3)
    log = ws.root / "run.log"
    proc = _serve(ws, emulator, log)
    try:
        old.rename(ws.db)  # `mv old.db ledger.db`
        assert "replaced" in _stopped_on(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cp_of_an_older_copy_under_run_stops_it(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws = Workspace(tmp_path / "cp", emulator=emulator)
    _ledger_with_jobs(ws, "a", 3)
    old = ws.root / "old.db"
    shutil.copyfile(ws.db, old)
    _ledger_with_jobs(ws, "b", 3)
    log = ws.root / "run.log"
    proc = _serve(ws, emulator, log)
    try:
        inode = Path(ws.db).stat().st_ino
        subprocess.run(["cp", str(old), str(ws.db)], check=True)  # same inode, old bytes
        assert Path(ws.db).stat().st_ino == inode
        assert "older copy" in _stopped_on(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_migration_6_gives_an_old_ledger_its_id(tmp_path: Path) -> None:
    """A ledger as the code before migration 6 made it (schema 5, a row in it)."""
    db = tmp_path / "ledger.db"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    for script in MIGRATIONS[:5]:
        for statement in migration_statements(script):
            con.execute(statement)
    con.execute("PRAGMA user_version = 5")
    con.execute(
        "INSERT INTO jobs(idem, spec, model, status, created_at, state_since, updated_at)"
        " VALUES ('k1', '{\"input\":\"x\",\"model\":\"m\"}', 'm', 'reserving', 1, 1, 1)"
    )
    con.close()

    async def opened() -> tuple[str | None, int, int]:
        ledger = await open_ledger(db)
        try:
            rows = await ledger.select("SELECT COUNT(*) FROM jobs")
            return ledger.ledger_id, await ledger.schema_version(), int(rows[0][0])
        finally:
            await ledger.close()

    ledger_id, version, rows = asyncio.run(opened())
    assert version == SCHEMA_VERSION >= 6 and rows == 1
    assert ledger_id is not None and len(ledger_id) == 32
    assert marker_path(db).read_text().strip() == ledger_id
    assert asyncio.run(opened())[0] == ledger_id  # made once, kept
    other = tmp_path / "other.db"
    assert asyncio.run(_id_of(other)) not in (None, ledger_id)  # each ledger its own


async def _id_of(path: Path) -> str | None:
    ledger = await open_ledger(path)
    try:
        return ledger.ledger_id
    finally:
        await ledger.close()


def test_the_file_check_keeps_this_process_locks(tmp_path: Path) -> None:
    """The check opens the main file through SQLite (immutable), never by a
    descriptor of its own: closing one would drop this process's locks on the
    file, and the next process to close the ledger would take it for the last
    one and delete the WAL the service still writes to."""
    from reclaim_tui.core.ledger.identity import snapshot

    db = tmp_path / "ledger.db"
    mine = sqlite3.connect(db, isolation_level=None)
    try:
        mine.execute("PRAGMA journal_mode = WAL")
        mine.execute("CREATE TABLE t (x)")
        mine.execute("INSERT INTO t VALUES (1)")
        assert snapshot(str(db)).size
        other = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
            " c.execute('SELECT * FROM t'); c.close()"
        )
        subprocess.run([sys.executable, "-c", other, str(db)], check=True)
        assert Path(f"{db}-wal").exists()  # the other process knew it was not the last
    finally:
        mine.close()


def test_an_unreadable_main_file_is_a_change_only_when_it_stays_so(tmp_path: Path) -> None:
    """A read that meets a checkpoint half-way may fail once: that alone must
    not stop a service; a file that stays unreadable is a change."""
    from reclaim_tui.core.ledger.identity import UNREADABLE_LIMIT, changed, snapshot

    db = tmp_path / "ledger.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('ledger_id', 'abc')")
    con.commit()
    con.close()
    first = snapshot(str(db))
    assert (first.stored_id, first.unreadable) == ("abc", 0)
    good = db.read_bytes()
    with open(db, "r+b") as f:  # same inode, same size, not a database now
        f.write(b"\x00" * 100)
    now, seen = first, []
    for _ in range(UNREADABLE_LIMIT):
        now = snapshot(str(db), now)
        seen.append(changed("abc", first, now))
    assert seen[:-1] == [None] * (UNREADABLE_LIMIT - 1)
    assert seen[-1] is not None and "cannot be read" in seen[-1]
    with open(db, "r+b") as f:
        f.write(good)
    assert changed("abc", first, snapshot(str(db), now)) is None  # readable again


def test_a_ledger_moved_under_run_is_said_where_its_rows_are(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    """`mv ledger.db elsewhere.db` under a running service: SQLite keeps the
    WAL by the name it opened, so the rows written since the last checkpoint
    stay in `ledger.db-wal`, and the moved file alone lacks them (a tick on
    it would see them missing). The service stops saying where they are;
    the file put back holds them all."""
    ws = Workspace(tmp_path / "moved", emulator=emulator)
    _ledger_with_jobs(ws, "m", 2)
    log = ws.root / "run.log"
    proc = _serve(ws, emulator, log)
    try:
        late = write_jobs(ws.root / "late.jsonl", [{"input": f"late {i}"} for i in range(3)])
        added = ws.cli("submit", "--no-send", str(late))
        assert added.returncode == 0, added.stdout + added.stderr
        assert _until(lambda: ws.view().status_counts().get("consumed", 0) == 5)
        moved = ws.root / "elsewhere.db"
        Path(ws.db).rename(moved)
        change = _stopped_on(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert f"{ws.db}-wal" in change and "put the file back" in change, change
    moved.rename(ws.db)  # as the message says
    assert ws.view().status_counts().get("consumed", 0) == 5
