"""Issue 22 point 3: a NUL character in one job's text stays in that row.

PostgreSQL `text` cannot hold U+0000; a job input carrying one is accepted
and its result echoes it. On both engines the ledger must keep working for
every other job (tick, `run`, `migrate` SQLite → PostgreSQL), and the row's
own input and result must come back as they were sent and received.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from reclaim_tui.cli import cli
from reclaim_tui.config import DEFAULT_MODEL
from reclaim_tui.core.keys import idempotency_key
from reclaim_tui.core.ledger.opening import open_ledger
from reclaim_tui.core.models import JobSpec
from reclaim_tui.errors import LedgerError
from tests.helpers import EmulatorProcess, Workspace
from tests.helpers.procs import clean_env, write_jobs

NUL_INPUT = "before\u0000after"
OTHERS = 5


def _jobs(ws: Workspace) -> Path:
    lines = [{"input": NUL_INPUT}] + [{"input": f"plain {i}"} for i in range(OTHERS)]
    return write_jobs(ws.root / "jobs.jsonl", lines)


async def _stored(db: str) -> tuple[dict[str, str], str, str]:
    """(status per key, the NUL job's spec input, its stored output text)."""
    ledger = await open_ledger(db)
    try:
        statuses = {r.idem: r.status.value async for r in ledger.iter_rows()}
        key = _nul_key()
        row = await ledger.get(key)
        result = await ledger.result(key)
        assert row is not None and result is not None
        return statuses, row.job.input, result.output_text
    finally:
        await ledger.close()


def _nul_key() -> str:
    return idempotency_key(JobSpec(input=NUL_INPUT, model=DEFAULT_MODEL))


def _check(db: str) -> None:
    statuses, stored_input, output = asyncio.run(_stored(db))
    assert len(statuses) == OTHERS + 1
    assert set(statuses.values()) == {"consumed"}, statuses
    assert stored_input == NUL_INPUT
    assert "\u0000" in output and output.endswith(NUL_INPUT)


def test_nul_in_input_and_result_ticks_on_both_engines(
    tmp_path: Path, db_url: str, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "ws", emulator=emulator, db_url=db_url)
    jobs = _jobs(ws)
    first = ws.tick("--first-poll", "0", jobs=jobs)
    assert first.returncode == 0, first.stdout + first.stderr
    for _ in range(10):
        done = ws.tick("--first-poll", "0")
        assert done.returncode == 0, done.stdout + done.stderr
        if asyncio.run(_stored(str(ws.db)))[0].values() == {"consumed"}:
            break
    _check(str(ws.db))
    # The key of the job is what it always was: sha256 of its canonical spec.
    assert _nul_key() == idempotency_key(JobSpec(input=NUL_INPUT, model=DEFAULT_MODEL))
    shown = ws.cli("show", _nul_key(), engine=False)
    assert shown.returncode == 0, shown.stdout + shown.stderr


def test_nul_in_input_and_result_under_run(
    tmp_path: Path, db_url: str, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "svc", emulator=emulator, db_url=db_url)
    jobs = _jobs(ws)
    log = ws.root / "run.log"
    args = ["run", "--db", str(ws.db), "--out", str(ws.out), "--log", str(log)]
    args += ["--base-url", emulator.base_url, "--api-key", emulator.api_key]
    args += ["--jobs", str(jobs), "--idle-sleep", "0.2", "--first-poll", "0.2"]
    proc = subprocess.Popen([sys.executable, "-m", "reclaim_tui", *args], env=clean_env())
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                statuses = asyncio.run(_stored(str(ws.db)))[0]
            except (AssertionError, LedgerError):  # not created yet, or not done yet
                statuses = {}
            if len(statuses) == OTHERS + 1 and set(statuses.values()) == {"consumed"}:
                break
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert code == 0, events[-3:]
    _check(str(ws.db))


@pytest.mark.postgres
def test_nul_in_input_and_result_migrates_to_postgresql(
    tmp_path: Path, pg_dsn: str, emulator: EmulatorProcess
) -> None:
    ws = Workspace(tmp_path / "src", emulator=emulator)
    jobs = _jobs(ws)
    assert ws.tick("--first-poll", "0", jobs=jobs).returncode == 0
    for _ in range(10):
        assert ws.tick("--first-poll", "0").returncode == 0
        if set(asyncio.run(_stored(str(ws.db)))[0].values()) == {"consumed"}:
            break
    _check(str(ws.db))
    moved = CliRunner().invoke(cli, ["migrate", "--from", str(ws.db), "--to", pg_dsn])
    assert moved.exit_code == 0, moved.output
    _check(pg_dsn)
    checked = CliRunner().invoke(cli, ["migrate", "--from", str(ws.db), "--to", pg_dsn, "--check"])
    assert checked.exit_code == 0, checked.output


@pytest.mark.parametrize(
    "text", ["", "plain", "a\u0000b", "\u0000", "\ufdd0", "\ufdd0x\u0000", "ü\ufdd0", '"\\u0000"']
)
def test_pg_text_encoding_is_lossless(text: str) -> None:
    from reclaim_tui.core.ledger.postgres.text import decode, encode

    stored = encode(text)
    assert "\u0000" not in stored
    assert decode(stored) == text
    if "\u0000" not in text and not text.startswith("\ufdd0"):
        assert stored == text  # every ordinary string is stored as it is
