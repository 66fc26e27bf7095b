"""`cancel` with the API unreachable (issue 25, defect 3): it said `KEY:
cancelled`, exit 0, while the interaction kept running and billing. Now it
says the remote cancel is pending (exit 6), the row is marked "cancel
pending" (cancelled here, `held`), and the next tick asks the API again
until it confirms. Real CLI processes, the real SDK, the emulator."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reclaim_tui.core.ledger.dialect import Sql
from tests.helpers import EmulatorProcess, Workspace, run_cli
from tests.helpers.procs import write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorProcess]:
    """Interactions that run for an hour: still running when cancelled."""
    with EmulatorProcess(tmp_path_factory.mktemp("emulator"), latency=3600) as emu:
        yield emu


def row(db: Path, idem: str) -> tuple[str, int, str | None]:
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            Sql(lambda d: f"SELECT status, held, last_error FROM jobs WHERE idem = {d.p}"), (idem,)
        ).fetchone()
    finally:
        conn.close()
    return found[0], found[1], found[2]


def due_now(db: Path) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE jobs SET next_at = 0")
    conn.close()


def test_cancel_with_the_api_down_exits_6_and_the_next_tick_cancels_remotely(
    make_workspace: Callable[..., Workspace], emulator: EmulatorProcess
) -> None:
    ws = make_workspace(use_recording_sink=False)
    jobs = write_jobs(ws.root / "jobs.jsonl", [{"input": "a long job", "key": "long"}])
    first = ws.tick("--first-poll", "3600", jobs=jobs)
    assert first.returncode == 0, first.stderr
    assert row(ws.db, "long")[0] == "submitted"

    flags = ws.engine_flags("cancel")
    flags[flags.index("--base-url") + 1] = DEAD_API
    down = run_cli(["cancel", *flags, "long"], env=ws.env())
    assert down.returncode == 6, (down.stdout, down.stderr)
    assert "cancel pending" in down.stdout + down.stderr
    assert "Traceback" not in down.stderr
    status, held, error = row(ws.db, "long")
    assert (status, held) == ("cancelled", 1), error
    assert error is not None and error.startswith("cancel pending")
    (remote,) = emulator.find("long")
    assert remote["status"] != "cancelled"

    due_now(ws.db)
    ticked = ws.tick()
    assert ticked.returncode == 0, ticked.stderr
    (remote,) = emulator.find("long")
    assert remote["status"] == "cancelled", json.dumps(remote)[:300]
    assert row(ws.db, "long")[:2] == ("cancelled", 0)
    shown = ws.cli("show", "long", engine=False)
    assert "remote cancel confirmed" in shown.stdout, shown.stdout
