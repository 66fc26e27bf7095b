"""Issue 40 items 3 and 15: a ledger that went back in time or branched
under a running service, and the maintenance that must not look like it.

Item 3. An older backup restored into the live ledger through SQLite's
backup API (`sqlite3 ledger.db ".restore old.db"`) keeps the file's inode,
size class, id and (until a checkpoint) its main-file events sequence: the
service went on and sent every job again. A copy of the ledger made by
`VACUUM INTO` that went on elsewhere, `cp`'d over the live file, was missed
too, and left malformed by the live WAL's frames. The service now keeps a
generation of its own in the ledger (bumped by compare-and-set at each of
its commits, read before each pass), and checks that the main file's newest
event is one of the ledger it reads: either stops it with `ledger_replaced`
(exit 4) and nothing is sent again.

Item 15. VACUUM, `wal_checkpoint(TRUNCATE)`, `.backup` from the live ledger
while the service runs, and a restore while it is stopped raise no alarm.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import write_jobs


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


def _sqlite3(db: Path, command: str) -> None:
    """The sqlite3 shell, as an operator runs it beside a service: waiting
    for the service's write lock (the shell's default is to fail at once)."""
    subprocess.run(
        ["sqlite3", "-cmd", ".timeout 30000", str(db), command],
        check=True,
        capture_output=True,
        timeout=60,
    )


class Service:
    def __init__(self, ws: Workspace, name: str = "run") -> None:
        self.ws = ws
        self.log = ws.root / f"{name}.log"
        args = ["run", *ws.engine_flags("run"), "--log", str(self.log), "--idle-sleep", "0.1"]
        self.proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=ws.env())
        assert _until(lambda: any(line["event"] == "pass" for line in _lines(self.log)))

    def events(self, name: str) -> list[dict[str, object]]:
        return [line for line in _lines(self.log) if line["event"] == name]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def _submit(ws: Workspace, name: str, count: int) -> list[str]:
    jobs = write_jobs(
        ws.root / f"{name}.jsonl", [{"key": f"{name}-{n}", "input": name} for n in range(count)]
    )
    done = ws.cli("submit", str(jobs), "--no-send")
    assert done.returncode == 0, done.stdout + done.stderr
    return [f"{name}-{n}" for n in range(count)]


def _consumed(ws: Workspace, keys: list[str]) -> bool:
    rows = ws.view().rows()
    return all(k in rows and rows[k]["status"] == "consumed" for k in keys)


def test_an_older_backup_restored_under_the_service_stops_it(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "restore", emulator=emulator)
    keys = _submit(ws, "r", 10)
    old = ws.root / "old.db"
    _sqlite3(Path(ws.db), f".backup {old}")  # all 10 still `reserving` in it
    creates = emulator.stats()["calls"]["create"]
    service = Service(ws)
    try:
        assert _until(lambda: _consumed(ws, keys))
        assert emulator.stats()["calls"]["create"] == creates + 10
        _sqlite3(Path(ws.db), f".restore {old}")
        code = service.proc.wait(60)
    finally:
        service.stop()
    assert code == 4, _lines(service.log)[-3:]
    (replaced,) = service.events("ledger_replaced")
    assert "this service's commits" in str(replaced["change"]), replaced
    assert emulator.stats()["calls"]["create"] == creates + 10  # nothing paid twice


def test_a_branched_copy_put_over_the_live_file_stops_it(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "branch", emulator=emulator)
    first = _submit(ws, "a", 3)
    service = Service(ws)
    try:
        assert _until(lambda: _consumed(ws, first))
        branch = ws.root / "branch.db"
        con = sqlite3.connect(ws.db)
        con.execute("VACUUM INTO ?", (str(branch),))
        con.close()
        # The copy goes on elsewhere (a tick on its own path) …
        more = write_jobs(ws.root / "b.jsonl", [{"key": "b-0", "input": "b"}])
        went_on = ws.tick("--db", str(branch), jobs=more)
        assert went_on.returncode == 0, went_on.stdout + went_on.stderr
        # … while the live ledger gets fresh WAL frames from the service.
        later = _submit(ws, "c", 3)
        assert _until(lambda: _consumed(ws, later))
        creates = emulator.stats()["calls"]["create"]
        subprocess.run(["cp", str(branch), str(ws.db)], check=True)
        code = service.proc.wait(60)
    finally:
        service.stop()
    assert code == 4, _lines(service.log)[-3:]
    (replaced,) = service.events("ledger_replaced")
    assert "a copy that went on elsewhere" in str(replaced["change"]), replaced
    assert emulator.stats()["calls"]["create"] == creates


def _maintained_without_alarm(ws: Workspace, service: Service, name: str) -> None:
    """After the maintenance: new jobs are still worked (a pass ran after
    it), the service drains with 0 and said no `ledger_replaced`."""
    keys = _submit(ws, name, 2)
    assert _until(lambda: _consumed(ws, keys)), _lines(service.log)[-3:]
    assert service.stop() == 0, _lines(service.log)[-3:]
    assert service.events("ledger_replaced") == []


def test_vacuum_under_the_service_is_no_alarm(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws = Workspace(tmp_path / "vacuum", emulator=emulator)
    keys = _submit(ws, "v", 3)
    service = Service(ws)
    assert _until(lambda: _consumed(ws, keys))
    _sqlite3(Path(ws.db), "VACUUM")
    _maintained_without_alarm(ws, service, "v2")


def test_a_truncating_checkpoint_under_the_service_is_no_alarm(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "checkpoint", emulator=emulator)
    keys = _submit(ws, "w", 3)
    service = Service(ws)
    assert _until(lambda: _consumed(ws, keys))
    _sqlite3(Path(ws.db), "PRAGMA wal_checkpoint(TRUNCATE)")
    _maintained_without_alarm(ws, service, "w2")


def test_a_backup_of_the_live_ledger_is_no_alarm(tmp_path: Path, emulator: EmulatorProcess) -> None:
    ws = Workspace(tmp_path / "backup", emulator=emulator)
    keys = _submit(ws, "k", 3)
    service = Service(ws)
    assert _until(lambda: _consumed(ws, keys))
    _sqlite3(Path(ws.db), f".backup {ws.root / 'copy.db'}")
    _maintained_without_alarm(ws, service, "k2")
    assert sqlite3.connect(ws.root / "copy.db").execute("PRAGMA integrity_check").fetchone() == (
        "ok",
    )


def test_a_restore_while_the_service_is_stopped_is_no_alarm(
    tmp_path: Path, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "stopped", emulator=emulator)
    keys = _submit(ws, "s", 3)
    service = Service(ws)
    assert _until(lambda: _consumed(ws, keys))
    backup = ws.root / "backup.db"
    _sqlite3(Path(ws.db), f".backup {backup}")
    _maintained_without_alarm(ws, service, "s2")  # the ledger goes on past the backup
    _sqlite3(Path(ws.db), f".restore {backup}")  # nothing runs: the documented restore
    again = Service(ws, "after-restore")
    _maintained_without_alarm(ws, again, "s3")
