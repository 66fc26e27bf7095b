"""Small CLI defects of issue 25 (item 8), each through the real CLI in a
fresh process (tests/helpers.run_cli), as a user meets them."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

from tests.helpers import run_cli
from tests.helpers.procs import write_jobs

#: Nothing listens on port 9: a command that calls the API finds it unreachable.
DEAD_API = "http://127.0.0.1:9"


def test_run_once_with_the_api_down_exits_6_like_tick(tmp_path: Path) -> None:
    jobs = write_jobs(tmp_path / "jobs.jsonl", [{"input": "unsent", "key": "unsent"}])
    common = ["--base-url", DEAD_API, "--api-key", "k", "--jobs", str(jobs)]
    tick = run_cli(["tick", "--db", str(tmp_path / "a.db"), *common])
    assert tick.returncode == 6, tick.stderr
    # A second ledger beside the first: asked for (issue 32 item 8).
    once = run_cli(["run", "--once", "--create", "--db", str(tmp_path / "b.db"), *common])
    assert once.returncode == 6, (once.stdout, once.stderr)
    assert "Traceback" not in once.stderr


def _held_for_an_answer(db: Path) -> str:
    """A ledger with one submitted row whose interaction asks a question."""
    from reclaim_tui.core.clock import ManualClock
    from reclaim_tui.core.engine.engine import Engine
    from reclaim_tui.core.fakes import FakeBackend
    from reclaim_tui.core.keys import idempotency_key
    from reclaim_tui.core.ledger.opening import open_ledger
    from reclaim_tui.core.models import JobSpec
    from reclaim_tui.core.sinks import DirectorySink

    spec = JobSpec(input="plan a study of tides", model="m")
    idem = idempotency_key(spec)

    async def build() -> None:
        clock = ManualClock(time.time())
        fake = FakeBackend(clock=clock, latency=None)
        ledger = await open_ledger(db, clock=clock)
        try:
            engine = Engine(ledger, fake, DirectorySink(db.parent / "out"))
            await engine.submit([spec])
            fake.fail(fake.handle_for(idem), status="requires_action", error="")
            clock.advance(3600)
            await engine.reclaim()
            row = await ledger.get(idem)
            assert row is not None and row.held
        finally:
            await ledger.close()

    asyncio.run(build())
    return idem


def test_answer_with_the_api_down_exits_6_and_an_empty_text_exits_2(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    idem = _held_for_an_answer(db)
    api = ["--db", str(db), "--base-url", DEAD_API, "--api-key", "k"]
    down = run_cli(["answer", *api, idem, "go ahead"])
    assert down.returncode == 6, (down.stdout, down.stderr)
    assert "Traceback" not in down.stderr
    empty = run_cli(["answer", *api, idem, "  "])
    assert empty.returncode == 2, (empty.stdout, empty.stderr)
    assert "empty" in empty.stderr


def _ledger_of(tmp_path: Path, count: int) -> Path:
    """`count` reserved rows (the API down: nothing sent), made by the CLI."""
    db = tmp_path / "rows.db"
    jobs = write_jobs(tmp_path / "rows.jsonl", [{"input": f"job {n}"} for n in range(count)])
    made = run_cli(
        ["tick", "--db", str(db), "--base-url", DEAD_API, "--api-key", "k", "--jobs", str(jobs)]
    )
    assert made.returncode == 6, made.stderr
    return db


def test_show_prints_times_with_their_zone_and_an_empty_key_is_refused_shortly(
    tmp_path: Path,
) -> None:
    db = _ledger_of(tmp_path, 30)
    listed = run_cli(["export", "--db", str(db)])
    idem = json.loads(listed.stdout.splitlines()[0])["idem"]
    shown = run_cli(["show", "--db", str(db), idem])
    assert shown.returncode == 0, shown.stderr
    created = next(line for line in shown.stdout.splitlines() if "created_at" in line)
    assert re.search(r"\d\d:\d\d:\d\dZ$", created), created
    empty = run_cli(["show", "--db", str(db), ""])
    assert empty.returncode == 5, empty.stderr
    assert "empty" in empty.stderr and idem not in empty.stderr, empty.stderr


def test_one_row_is_one_row_not_1_rows(tmp_path: Path) -> None:
    db = _ledger_of(tmp_path, 1)
    out = tmp_path / "one.jsonl"
    exported = run_cli(["export", "--db", str(db), "--output", str(out)])
    assert exported.returncode == 0, exported.stderr
    assert f"1 row written to {out}" in exported.stderr, exported.stderr


def test_a_missing_jobs_file_is_said_as_such_not_as_a_bad_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such.jsonl"
    proc = run_cli(["tick", "--db", str(tmp_path / "l.db"), "--jobs", str(missing)])
    assert proc.returncode == 3, proc.stderr
    assert "cannot read" in proc.stderr and "bad line" not in proc.stderr, proc.stderr


def test_submit_of_a_file_without_jobs_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n# nothing yet\n")
    args = ["--db", str(tmp_path / "l.db"), "--base-url", DEAD_API, "--api-key", "k"]
    proc = run_cli(["submit", *args, str(empty)])
    assert proc.returncode == 0, proc.stderr
    assert "no jobs" in proc.stdout and "0 reserved" not in proc.stdout, proc.stdout


def test_console_without_a_key_suggests_readonly(tmp_path: Path) -> None:
    db = _ledger_of(tmp_path, 1)
    proc = run_cli(["console", "--db", str(db)], timeout=60)
    assert proc.returncode == 2, (proc.stdout[-500:], proc.stderr)
    assert "no Gemini API key" in proc.stderr and "--readonly" in proc.stderr, proc.stderr
